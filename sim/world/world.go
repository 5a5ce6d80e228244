// Package world is rlab's own observer of the cluster. It watches the Echo
// namespaces with informers (Echo, Deployments, ReplicaSets, Pods, Leases),
// keeps a model of the tree Echo → Deployment → ReplicaSet → Pods per
// namespace, and derives the events no single operator can see: garbage
// collection, drift and its repair, convergence after an edit, and who holds
// the leader Lease.
//
// The model is built from the informers' own events, never from an operator's
// account, so the screen and the lessons check what really happened.
package world

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/trace"
)

// LabelShipped marks, with the style's name, the Deployment of an operator
// shipped into the cluster (sandbox.Ship) and its pods: the operator's own,
// not an Echo's. The world leaves them out.
const LabelShipped = "rlab.kkloud.io/shipped-operator"

// Source is the trace source of every event the world derives.
const Source = trace.SourceWorld

// DefaultSyncTimeout bounds how long Start waits for the informers' first list.
const DefaultSyncTimeout = 60 * time.Second

// DefaultSettle is how long a drift, or a deletion whose owner still looks
// alive, waits for the other informers before it is judged.
const DefaultSettle = 250 * time.Millisecond

// ErrStopped is returned by WaitFor once the world has stopped watching.
var ErrStopped = errors.New("world: stopped")

// Options configures a World.
type Options struct {
	Config     *rest.Config      // admin
	Namespaces []string          // e.g. echo-shell, echo-clientgo, echo-runtime
	Publish    func(trace.Event) // derived events; must never block; may be nil
	Log        *slog.Logger      // may be nil
	// SyncTimeout bounds the wait for the first list; DefaultSyncTimeout if 0.
	SyncTimeout time.Duration
	// Settle is how long the World waits before judging what depends on the
	// order of two informers (drift; a deletion whose owner looks alive);
	// DefaultSettle if 0. Judged events keep the time they were seen.
	Settle time.Duration
	// Image is what the operators were told Echo pods run: another image is
	// drift. echo.DefaultImage if empty.
	Image string
}

// World is a live model of the watched namespaces.
type World struct {
	opts Options
	log  *slog.Logger

	mu  sync.Mutex
	ns  map[string]*nsModel
	gen chan struct{} // closed and replaced on every change; WaitFor waits on it

	changed chan struct{} // capacity 1, for one consumer (the screen)
	done    chan struct{} // closed once every informer has stopped
	stop    context.CancelFunc

	// Settle timers, so that Done waits for none of them to publish.
	stopped  bool
	timers   map[*settleTimer]struct{}
	settling int // judgments not yet made and published
	pending  sync.WaitGroup
}

type settleTimer struct{ t *time.Timer }

// Start starts one namespaced informer factory (typed) and one dynamic factory
// per namespace, waits until every handler has seen the initial list, and
// returns. The informers stop when ctx ends; Done is closed after that.
func Start(ctx context.Context, opts Options) (*World, error) {
	if opts.Config == nil {
		return nil, errors.New("world: no rest config")
	}
	if len(opts.Namespaces) == 0 {
		return nil, errors.New("world: no namespaces to watch")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.Settle <= 0 {
		opts.Settle = DefaultSettle
	}
	if opts.Image == "" {
		opts.Image = echo.DefaultImage
	}
	cs, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("world: client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("world: dynamic client: %w", err)
	}
	w := &World{
		opts:    opts,
		log:     opts.Log,
		ns:      map[string]*nsModel{},
		gen:     make(chan struct{}),
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),
		timers:  map[*settleTimer]struct{}{},
	}
	began := time.Now()
	wctx, cancel := context.WithCancel(ctx)
	var (
		factories []informers.SharedInformerFactory
		dynamics  []dynamicinformer.DynamicSharedInformerFactory
		synced    []cache.DoneChecker
	)
	register := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return err
		}
		// The registration is synced once the store is and every object of
		// the initial list has reached our handler, i.e. is in the model.
		synced = append(synced, reg.HasSyncedChecker())
		return nil
	}
	for _, ns := range opts.Namespaces {
		if _, dup := w.ns[ns]; dup {
			continue
		}
		m := newNSModel(ns, opts.Image)
		m.later = func(fn func(*nsModel, time.Time) []trace.Event) { w.later(ns, fn) }
		w.ns[ns] = m
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
		df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
		factories, dynamics = append(factories, f), append(dynamics, df)
		for _, r := range []struct {
			inf cache.SharedIndexInformer
			h   cache.ResourceEventHandler
		}{
			{df.ForResource(echov1.Resource).Informer(), w.echoHandler(ns)},
			{f.Apps().V1().Deployments().Informer(), w.deploymentHandler(ns)},
			{f.Apps().V1().ReplicaSets().Informer(), w.replicaSetHandler(ns)},
			{f.Core().V1().Pods().Informer(), w.podHandler(ns)},
			{f.Coordination().V1().Leases().Informer(), w.leaseHandler(ns)},
			{f.Core().V1().ConfigMaps().Informer(), w.configMapHandler(ns)},
		} {
			if err := register(r.inf, r.h); err != nil {
				cancel()
				return nil, fmt.Errorf("world: watch %s: %w", ns, err)
			}
		}
	}
	for _, f := range factories {
		f.Start(wctx.Done())
	}
	for _, df := range dynamics {
		df.Start(wctx.Done())
	}
	go func() {
		<-wctx.Done()
		w.mu.Lock()
		w.stopped = true
		for st := range w.timers {
			if st.t.Stop() {
				w.pending.Done()
			}
		}
		w.mu.Unlock()
		for _, f := range factories {
			f.Shutdown()
		}
		for _, df := range dynamics {
			df.Shutdown()
		}
		w.pending.Wait()
		close(w.done)
	}()
	sctx, scancel := context.WithTimeout(wctx, opts.SyncTimeout)
	defer scancel()
	if !cache.WaitFor(sctx, "", synced...) {
		cancel()
		<-w.done
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("world: waiting for informers: %w", err)
		}
		return nil, fmt.Errorf("world: informers not synced within %s: %w", opts.SyncTimeout, sctx.Err())
	}
	w.stop = cancel // the informers stop with ctx; kept so the context is released
	w.log.Info("world synced", "namespaces", opts.Namespaces, "took", time.Since(began))
	return w, nil
}

// Done is closed once the informers have stopped (after Start's ctx ended).
func (w *World) Done() <-chan struct{} { return w.done }

// Changed has a value when the model changed since it was last read. It is
// meant for one consumer; others use WaitFor.
func (w *World) Changed() <-chan struct{} { return w.changed }

// Snapshot returns a deep copy of the model, safe to keep and modify.
func (w *World) Snapshot() Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.snapshotLocked()
}

// WaitFor returns nil as soon as cond holds: it checks a snapshot at once,
// then again after every change. It returns ctx's error when ctx ends first,
// and ErrStopped if the world stops watching.
func (w *World) WaitFor(ctx context.Context, cond func(Snapshot) bool) error {
	for {
		w.mu.Lock()
		s, next := w.snapshotLocked(), w.gen
		w.mu.Unlock()
		if cond(s) {
			return nil
		}
		select {
		case <-next:
		case <-ctx.Done():
			return ctx.Err()
		case <-w.done:
			return ErrStopped
		}
	}
}

func (w *World) snapshotLocked() Snapshot {
	s := Snapshot{Namespaces: make(map[string]*NamespaceView, len(w.ns))}
	for name, m := range w.ns {
		s.Namespaces[name] = m.view()
	}
	return s
}

// update runs fn on namespace ns's model under the lock, wakes the waiters and
// then publishes what fn derived. Nothing here blocks: informer handlers call
// it, and a slow handler would stall that informer's delivery.
func (w *World) update(ns string, fn func(m *nsModel, now time.Time) []trace.Event) {
	w.mu.Lock()
	m := w.ns[ns]
	if m == nil || w.stopped {
		w.mu.Unlock()
		return
	}
	evs := fn(m, time.Now())
	close(w.gen)
	w.gen = make(chan struct{})
	w.mu.Unlock()

	select {
	case w.changed <- struct{}{}:
	default:
	}
	// Published outside the lock, so a subscriber may call Snapshot.
	for _, e := range evs {
		w.log.Debug("world event", "kind", e.Kind, "ns", e.Namespace, "object", e.Object, "summary", e.Summary())
		if w.opts.Publish != nil {
			w.opts.Publish(e)
		}
	}
}

// later runs fn on namespace ns's model after the settle time, as an update.
// The caller holds w.mu.
func (w *World) later(ns string, fn func(m *nsModel, now time.Time) []trace.Event) {
	if w.stopped {
		return
	}
	st := &settleTimer{}
	w.timers[st] = struct{}{}
	w.settling++
	w.pending.Add(1)
	st.t = time.AfterFunc(w.opts.Settle, func() {
		defer w.pending.Done()
		w.update(ns, func(m *nsModel, now time.Time) []trace.Event {
			delete(w.timers, st)
			return fn(m, now)
		})
		// Counted down only once its events are published.
		w.mu.Lock()
		w.settling--
		w.mu.Unlock()
	})
}

// Settling is how many judgments (a drift, a deletion whose owner looked
// alive) wait for the settle time. Once it is 0, every event derived from the
// model seen so far has been published: wait for it before asserting that
// something did not happen.
func (w *World) Settling() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.settling
}

// unwrap returns the last known object of a delete that the informer missed.
func unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// toEcho converts the dynamic informer's object to an Echo.
func toEcho(obj any) (*echov1.Echo, error) {
	u, ok := unwrap(obj).(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected %T in Echo informer", obj)
	}
	e := &echov1.Echo{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, e); err != nil {
		return nil, fmt.Errorf("convert Echo %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return e, nil
}

func (w *World) echoHandler(ns string) cache.ResourceEventHandler {
	upsert := func(obj any, initial bool) {
		e, err := toEcho(obj)
		if err != nil {
			w.log.Warn("world: skip Echo", "ns", ns, "err", err)
			return
		}
		w.update(ns, func(m *nsModel, now time.Time) []trace.Event { return m.upsertEcho(e, initial, now) })
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, obj any) { upsert(obj, false) },
		DeleteFunc: func(obj any) {
			e, err := toEcho(obj)
			if err != nil {
				w.log.Warn("world: skip Echo delete", "ns", ns, "err", err)
				return
			}
			w.update(ns, func(m *nsModel, now time.Time) []trace.Event { return m.deleteEcho(e, now) })
		},
	}
}

// typedHandler adapts a typed upsert/delete pair to an informer handler.
func typedHandler[T any](w *World, ns string, upsert, del func(m *nsModel, obj T, now time.Time) []trace.Event) cache.ResourceEventHandler {
	call := func(fn func(m *nsModel, obj T, now time.Time) []trace.Event, obj any) {
		o, ok := unwrap(obj).(T)
		if !ok {
			w.log.Warn("world: unexpected object", "ns", ns, "type", fmt.Sprintf("%T", obj))
			return
		}
		if m, ok := any(o).(metav1.Object); ok && m.GetLabels()[LabelShipped] != "" {
			return // an operator's own Deployment, ReplicaSet or pod
		}
		w.update(ns, func(m *nsModel, now time.Time) []trace.Event { return fn(m, o, now) })
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { call(upsert, obj) },
		UpdateFunc: func(_, obj any) { call(upsert, obj) },
		DeleteFunc: func(obj any) { call(del, obj) },
	}
}

func (w *World) deploymentHandler(ns string) cache.ResourceEventHandler {
	return typedHandler(w, ns, (*nsModel).upsertDeployment, (*nsModel).deleteDeployment)
}

func (w *World) replicaSetHandler(ns string) cache.ResourceEventHandler {
	return typedHandler(w, ns, (*nsModel).upsertReplicaSet, (*nsModel).deleteReplicaSet)
}

func (w *World) podHandler(ns string) cache.ResourceEventHandler {
	return typedHandler(w, ns, (*nsModel).upsertPod, (*nsModel).deletePod)
}

func (w *World) configMapHandler(ns string) cache.ResourceEventHandler {
	return typedHandler(w, ns,
		func(m *nsModel, cm *corev1.ConfigMap, now time.Time) []trace.Event {
			m.configMapChanged(cm, now)
			return append(m.setRegistry(cm), m.setDefaults(cm)...)
		},
		func(m *nsModel, cm *corev1.ConfigMap, now time.Time) []trace.Event {
			m.configMapChanged(cm, now)
			switch cm.Name {
			case echo.RegistryName:
				return m.setRegistry(nil)
			case echo.DefaultsName:
				return m.setDefaults(nil)
			}
			return nil
		})
}

func (w *World) leaseHandler(ns string) cache.ResourceEventHandler {
	return typedHandler(w, ns,
		func(m *nsModel, l *coordinationv1.Lease, now time.Time) []trace.Event {
			return m.setLease(l.Name, l, now)
		},
		func(m *nsModel, l *coordinationv1.Lease, now time.Time) []trace.Event {
			return m.setLease(l.Name, nil, now)
		})
}
