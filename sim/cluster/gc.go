package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"

	"github.com/kkloud/rlab/sim/proc"
)

// kube-controller-manager's garbage collector learns which resource types
// exist from discovery when it starts, and then every 30 s
// (cmd/kube-controller-manager/app/core.go, `const syncPeriod = 30 *
// time.Second`, v1.36.3; no flag changes it). A CRD established after it
// started waits for that resync before a deleted owner's dependents of the
// new type, or the new type's dependents, are collected: 40.7 s measured
// with sample-controller's Foo. So the garbage collector runs in a
// kube-controller-manager of its own, and rlab restarts it, and nothing
// else, once a CRD it has not discovered is established and served. A
// garbage collector that starts lists every object again and collects the
// dependents of owners that are gone: nothing deleted meanwhile is missed.

// gcState is the garbage collector process's: the CRDs it discovered when
// it started, and what restarts it.
type gcState struct {
	args []string        // its arguments, the same at each restart
	saw  map[string]bool // CRDs established when it last started
	stop context.CancelFunc
	done chan struct{} // closed when the watch and any restart have ended
	// restarts counts them, for tests and the timeline.
	restarts int
}

// gcDebounce gathers CRDs applied together (a project's config/crd) into
// one restart.
const gcDebounce = 100 * time.Millisecond

// gcStarting records what the garbage collector about to start will
// discover: the CRDs established now. Called with args, before each start.
func (e *Envtest) gcStarting(args []string) error {
	names, err := e.establishedCRDs(context.Background())
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gc.args = args
	e.gc.saw = map[string]bool{}
	for _, n := range names {
		e.gc.saw[n] = true
	}
	return nil
}

// establishedCRDs names the CRDs established now.
func (e *Envtest) establishedCRDs(ctx context.Context) ([]string, error) {
	cs, err := apiextensionsclient.NewForConfig(e.cfg)
	if err != nil {
		return nil, err
	}
	list, err := cs.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list CRDs: %w", err)
	}
	var names []string
	for i := range list.Items {
		if crdEstablished(&list.Items[i]) {
			names = append(names, list.Items[i].Name)
		}
	}
	return names, nil
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
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
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || !crdEstablished(crd) {
			return
		}
		e.mu.Lock()
		known := e.gc.saw[crd.Name]
		e.mu.Unlock()
		if !known {
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

// restartGC waits until every CRD established that the garbage collector
// has not discovered is served (in discovery, where it will look), then
// stops it and starts it again.
func (e *Envtest) restartGC(ctx context.Context) error {
	names, err := e.establishedCRDs(ctx)
	if err != nil {
		return err
	}
	e.mu.Lock()
	var fresh []string
	for _, n := range names {
		if !e.gc.saw[n] {
			fresh = append(fresh, n)
		}
	}
	e.mu.Unlock()
	if len(fresh) == 0 {
		return nil
	}
	if err := e.servedInDiscovery(ctx, fresh); err != nil {
		return err
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
	args := e.gc.args
	e.mu.Unlock()
	if old != nil {
		if err := old.Stop(2 * time.Second); err != nil {
			e.opts.Log.Warn("garbage collector stopped with an error", "err", err)
		}
	}
	if err := e.gcStarting(args); err != nil {
		return err
	}
	if err := e.startAs(GarbageCollector, "kube-controller-manager", args, false, true); err != nil {
		return err
	}
	e.mu.Lock()
	e.gc.restarts++
	e.mu.Unlock()
	slices.Sort(fresh)
	e.mark(GarbageCollector, "restarted to discover "+strings.Join(fresh, ", ")+" (its own look is every 30 s)")
	return nil
}

// servedInDiscovery waits until discovery lists a resource of each CRD:
// the garbage collector finds resource types there.
func (e *Envtest) servedInDiscovery(ctx context.Context, crds []string) error {
	dc, err := discovery.NewDiscoveryClientForConfig(e.cfg)
	if err != nil {
		return err
	}
	return pollEvery(ctx, startPoll, 30*time.Second, "new CRDs in discovery", nil, func(ctx context.Context) (bool, error) {
		_, lists, err := dc.ServerGroupsAndResources()
		if err != nil && len(lists) == 0 {
			return false, err
		}
		served := map[string]bool{}
		for _, l := range lists {
			gv := l.GroupVersion
			group, _, _ := strings.Cut(gv, "/")
			for _, r := range l.APIResources {
				served[r.Name+"."+group] = true
			}
		}
		for _, n := range crds {
			if !served[n] {
				return false, nil
			}
		}
		return true, nil
	})
}
