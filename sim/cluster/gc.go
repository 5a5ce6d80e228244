package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"

	"github.com/kkloud/rlab/sim/proc"
)

// kube-controller-manager's garbage collector learns which resource types
// exist from discovery when it starts, and then every 30 s
// (cmd/kube-controller-manager/app/core.go, `const syncPeriod = 30 *
// time.Second`, v1.36.3; no flag changes it), counted from the end of the
// last sync. A CRD established after it started waits for that resync
// before a deleted owner's dependents of the new type, or the new type's
// dependents, are collected: 40.7 s measured with sample-controller's Foo.
// So the garbage collector runs in a kube-controller-manager of its own,
// and rlab restarts it, and nothing else, once a CRD it has not discovered
// is established and served. A garbage collector that starts lists every
// object again, and an owner found missing then has its dependents
// collected: nothing deleted in between is missed.

// gcState is the garbage collector process's: the CRDs it discovered when
// it started, and what restarts it.
type gcState struct {
	// saw holds the CRDs (by uid: one deleted and made again is new) the
	// running garbage collector discovered.
	saw  map[types.UID]bool
	stop context.CancelFunc
	done chan struct{} // closed when the watch and any restart have ended
}

// gcDebounce gathers CRDs applied together (a project's config/crd) into
// one restart.
const gcDebounce = 100 * time.Millisecond

// gcArgs are the garbage collector's flags besides servingArgs'.
var gcArgs = []string{
	"--controllers=garbagecollector",
	"--use-service-account-credentials=false",
	"--concurrent-gc-syncs=40",
}

// startGC starts the garbage collector, on a port of its own, and records
// the CRDs established and served now as the ones it discovers. Restarted,
// it goes on writing to its log. It returns its health URL.
func (e *Envtest) startGC(ctx context.Context, restart bool) (healthURL, error) {
	crds, err := e.crdsNow(ctx)
	if err != nil {
		return healthURL{}, err
	}
	saw := map[types.UID]bool{}
	for _, c := range crds {
		if c.established {
			saw[c.uid] = true
		}
	}
	args, h, err := e.servingArgs()
	if err != nil {
		return healthURL{}, err
	}
	e.mu.Lock()
	if restart {
		// What was seen before stays seen; a CRD established meanwhile
		// is either among the fresh ones or kicks the next restart.
		maps.Copy(saw, e.gc.saw)
	}
	e.gc.saw = saw
	e.mu.Unlock()
	if err := e.startAs(GarbageCollector, "kube-controller-manager", append(args, gcArgs...), false, restart); err != nil {
		return healthURL{}, err
	}
	return healthURL{GarbageCollector, h}, nil
}

// crd is what the restarts need of a CRD.
type crd struct {
	name        string
	uid         types.UID
	established bool
	// resources are its served versions' "plural.group/version", as
	// discovery lists them: none if no version is served.
	resources []string
}

// crdsNow lists the CRDs.
func (e *Envtest) crdsNow(ctx context.Context) ([]crd, error) {
	cs, err := apiextensionsclient.NewForConfig(e.cfg)
	if err != nil {
		return nil, err
	}
	list, err := cs.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list CRDs: %w", err)
	}
	out := make([]crd, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, crdOf(&list.Items[i]))
	}
	return out, nil
}

func crdOf(c *apiextensionsv1.CustomResourceDefinition) crd {
	r := crd{name: c.Name, uid: c.UID}
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			r.established = true
		}
	}
	for _, v := range c.Spec.Versions {
		if v.Served {
			r.resources = append(r.resources, c.Spec.Names.Plural+"."+c.Spec.Group+"/"+v.Name)
		}
	}
	return r
}

// watchCRDs restarts the garbage collector when a CRD it has not discovered
// is established, until Stop. A failure to watch is logged: garbage
// collection then waits for the resync, as it would without rlab.
func (e *Envtest) watchCRDs() {
	cs, err := apiextensionsclient.NewForConfig(e.cfg)
	if err != nil {
		e.opts.Log.Warn("no watch on CRDs: the garbage collector discovers new ones every 30 s", "err", err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	if e.stopping {
		e.mu.Unlock()
		cancel()
		return
	}
	done := make(chan struct{})
	e.gc.stop, e.gc.done = cancel, done
	e.mu.Unlock()
	factory := apiextensionsinformers.NewSharedInformerFactory(cs, 0)
	inf := factory.Apiextensions().V1().CustomResourceDefinitions().Informer()
	kick := make(chan struct{}, 1)
	seen := func(obj any) {
		c, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			return
		}
		r := crdOf(c)
		e.mu.Lock()
		known := e.gc.saw[r.uid]
		e.mu.Unlock()
		if r.established && len(r.resources) > 0 && !known {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	}); err != nil {
		e.opts.Log.Warn("no watch on CRDs: the garbage collector discovers new ones every 30 s", "err", err)
		cancel()
		close(done)
		return
	}
	factory.Start(ctx.Done())
	go func() {
		defer close(done)
		defer factory.Shutdown()
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
			}
			// Several CRDs applied at once: one restart for all.
			select {
			case <-ctx.Done():
				return
			case <-time.After(gcDebounce):
			}
			if err := e.restartGC(ctx); err != nil && ctx.Err() == nil {
				e.opts.Log.Warn("garbage collector not restarted: it discovers new CRDs every 30 s", "err", err)
			}
		}
	}()
}

// stopWatchingCRDs ends the watch and waits for a restart under way, so
// that Stop finds the garbage collector it started among the children.
func (e *Envtest) stopWatchingCRDs() {
	e.mu.Lock()
	e.stopping = true
	stop, done := e.gc.stop, e.gc.done
	e.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// restartGC waits until the CRDs established that the garbage collector
// has not discovered are in discovery, where it will look (30 s at most:
// then it goes on with those that are), kills it and starts it again on a
// new port, and waits for its /healthz.
func (e *Envtest) restartGC(ctx context.Context) error {
	dc, err := discovery.NewDiscoveryClientForConfig(e.cfg)
	if err != nil {
		return err
	}
	var fresh, pending []string
	err = pollEvery(ctx, startPoll, 30*time.Second, "new CRDs in discovery", nil, func(ctx context.Context) (bool, error) {
		crds, err := e.crdsNow(ctx)
		if err != nil {
			return false, err
		}
		e.mu.Lock()
		saw := maps.Clone(e.gc.saw)
		e.mu.Unlock()
		_, lists, err := dc.ServerGroupsAndResources()
		if err != nil && len(lists) == 0 {
			return false, err
		}
		served := map[string]bool{}
		for _, l := range lists {
			gv, err := schema.ParseGroupVersion(l.GroupVersion)
			if err != nil {
				continue
			}
			for _, r := range l.APIResources {
				served[r.Name+"."+gv.Group+"/"+gv.Version] = true
			}
		}
		fresh, pending = nil, nil
		for _, c := range crds {
			if !c.established || len(c.resources) == 0 || saw[c.uid] {
				continue
			}
			fresh = append(fresh, c.name)
			if !slices.ContainsFunc(c.resources, func(r string) bool { return served[r] }) {
				pending = append(pending, c.name)
			}
		}
		return len(pending) == 0, nil
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case len(fresh) == len(pending):
		return err // none of them served yet
	case err != nil:
		e.opts.Log.Warn("restarting the garbage collector for the CRDs served; these are not in discovery", "crds", pending, "err", err)
	}
	e.mu.Lock()
	if e.stopping {
		e.mu.Unlock()
		return nil
	}
	i := slices.IndexFunc(e.children, func(c *proc.Child) bool { return c.Name == GarbageCollector })
	var old *proc.Child
	if i >= 0 {
		old = e.children[i]
		e.children = slices.Delete(e.children, i, i+1)
	}
	e.mu.Unlock()
	if old != nil {
		// Killed, not stopped: it would wait for its controllers to shut
		// down, and the next one lists everything again anyway.
		_ = old.Signal(syscall.SIGKILL)
		<-old.Done()
	}
	h, err := e.startGC(ctx, true)
	if err != nil {
		return err
	}
	e.mu.Lock()
	for i := range e.health {
		if e.health[i].name == GarbageCollector {
			e.health[i] = h
		}
	}
	e.mu.Unlock()
	slices.Sort(fresh)
	e.mark(GarbageCollector, "restarted to discover "+strings.Join(fresh, ", ")+" (its own look is every 30 s)")
	return e.componentHealthy(ctx, GarbageCollector)
}
