// Package instrument is what the screen sees of the two Go operators, kept
// out of their code: the trace Emitter, and the Tracer that watches their
// informer events, workqueue and reconciles from the outside. It builds on
// client-go only, so the client-go operator links no controller-runtime;
// the controller-runtime adapters are in operators/runtime/crtrace.
package instrument

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/trace"
)

// Tracer is what the screen sees of one Go operator replica, kept out of
// the operator's own code: it watches the informer events from the outside
// (an event handler wrapper for client-go, a predicate for
// controller-runtime in operators/runtime/crtrace), remembers each one as the cause of the reconcile it
// will trigger, makes the workqueue visible, and wraps each reconcile with
// its start and end. The reconcile code tells it only what it changed,
// through Report* on its context.
type Tracer struct {
	em     *Emitter
	ns     string
	causes *causeSet
	depth  *queueDepth
	log    *slog.Logger
	ids    *atomic.Int64
	// keys maps an object to the keys of the Echoes its event queues; nil:
	// the Echo itself, or the Echo that controls the object.
	keys func(obj any) []string
}

// NewTracer traces a replica that works in namespace ns.
func NewTracer(em *Emitter, ns string, log *slog.Logger) *Tracer {
	return &Tracer{em: em, ns: ns, causes: newCauses(), depth: &queueDepth{}, log: log, ids: new(atomic.Int64)}
}

// Mapped is the tracer for a watch whose events an operator maps to Echoes
// with a function of its own (a ConfigMap to every Echo of its namespace):
// keys gives the "namespace/name" keys the operator's map function queues
// for obj, and each event is traced as mapped to those Echoes and
// remembered as a cause of each one's reconcile. It shares t's trace,
// causes and queue.
func (t *Tracer) Mapped(keys func(obj any) []string) *Tracer {
	m := *t
	m.keys = keys
	return &m
}

// emit records one event about object in the tracer's namespace.
func (t *Tracer) emit(kind trace.Kind, object string, p trace.Payload) {
	t.em.Emit(kind, t.ns, object, p)
}

// NewQueue is the rate-limiting workqueue of the operator, traced: see
// newTracedQueue. keyOf turns an item into its "namespace/name" key.
func NewQueue[T comparable](t *Tracer, name string, rl workqueue.TypedRateLimiter[T], keyOf func(T) string) workqueue.TypedRateLimitingInterface[T] {
	return newTracedQueue(name, rl, keyOf, t.causes, t.em, t.ns, t.depth)
}

// Handler wraps client-go event handlers: each event is traced and
// remembered as a cause of the reconcile of the Echo it maps to, then the
// operator's own handler runs. Updates that change nothing (a resync) are
// passed on untraced.
func (t *Tracer) Handler(h cache.ResourceEventHandlerFuncs) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			t.Added(obj, initial)
			if h.AddFunc != nil {
				h.AddFunc(obj)
			}
		},
		UpdateFunc: func(old, obj any) {
			if o, n, ok := metas(old, obj); ok && o.GetResourceVersion() != n.GetResourceVersion() {
				t.Updated(o, n)
			}
			if h.UpdateFunc != nil {
				h.UpdateFunc(old, obj)
			}
		},
		DeleteFunc: func(obj any) {
			t.Deleted(obj)
			if h.DeleteFunc != nil {
				h.DeleteFunc(obj)
			}
		},
	}
}

// Added traces an add (initial: listed when the informer started) and
// remembers it as a cause; Handler calls it, and so does the
// controller-runtime predicate in operators/runtime/crtrace.
func (t *Tracer) Added(obj any, initial bool) { t.observe(trace.InformerAdd, obj, initial, "", false) }

// Updated traces an update of old into obj and remembers it as a cause.
func (t *Tracer) Updated(old, obj any) {
	t.observe(trace.InformerUpdate, obj, false, changeOf(old, obj), false)
}

// Deleted traces a delete (obj may be a tombstone) and remembers it as a cause.
func (t *Tracer) Deleted(obj any) { t.observe(trace.InformerDelete, obj, false, "", false) }

// Filtered traces an event of kind that a predicate kept from the queue
// (old is nil but for an update): it is no cause of any reconcile.
func (t *Tracer) Filtered(kind trace.Kind, old, obj any, initial bool) {
	change := ""
	if kind == trace.InformerUpdate {
		change = changeOf(old, obj)
	}
	t.observe(kind, obj, initial, change, true)
}

// Reconcile runs reconcile(ctx, key) between reconcile.start (with the
// causes waiting for key) and reconcile.end (with what it reported through
// Report*), and logs the outcome.
func (t *Tracer) Reconcile(ctx context.Context, key string, reconcile func(ctx context.Context, key string) error) error {
	id := t.ids.Add(1)
	name := objectName(key)
	object := trace.Object(echov1.Kind, name)
	t.emit(trace.ReconcileStart, object, startPayload(id, t.causes.Take(key)))
	start := time.Now()

	out := &outcome{tracer: t, object: object, changed: trace.ChangedNone}
	err := reconcile(context.WithValue(ctx, outcomeKey{}, out), key)

	ms := float64(time.Since(start).Microseconds()) / 1000
	end := trace.Reconcile{ID: int(id), DurationMS: ms, Changed: out.changed, Status: out.status, Result: trace.ResultOK}
	log := t.log.With("echo", name, "ns", t.ns, "changed", out.changed, "ready", out.status, "duration_ms", ms)
	if err != nil {
		end.Result, end.Error = trace.ResultError, err.Error()
		log.Error("reconcile failed", "error", err)
	} else {
		log.Info("reconcile done")
	}
	t.emit(trace.ReconcileEnd, object, end)
	return err
}

// ReportChanged tells the trace what a reconcile did to its Deployment:
// "created", "updated" (or trace.ChangedNone, the default).
func ReportChanged(ctx context.Context, changed string) {
	if out, ok := ctx.Value(outcomeKey{}).(*outcome); ok {
		out.changed = changed
	}
}

// ReportStatus tells the trace the status.ready a reconcile reconciled to.
func ReportStatus(ctx context.Context, ready string) {
	if out, ok := ctx.Value(outcomeKey{}).(*outcome); ok {
		out.status = ready
	}
}

// ReportFinalizer tells the trace a reconcile added or removed the finalizer
// of its Echo (trace.FinalizerAdded, trace.FinalizerRemoved).
func ReportFinalizer(ctx context.Context, action string) {
	if out, ok := ctx.Value(outcomeKey{}).(*outcome); ok {
		out.tracer.emit(trace.Finalizer, out.object, trace.FinalizerChange{Action: action, Finalizer: echo.Finalizer})
	}
}

type outcomeKey struct{}

// outcome is what one reconcile reports; only its own goroutine writes it.
type outcome struct {
	tracer          *Tracer
	object          string
	changed, status string
}

// observe traces one informer event and, when it concerns an Echo (the Echo
// itself, or a child it controls), records it as a cause of that Echo's next
// reconcile. The key is found as the operator finds it: the object's own for
// an Echo, its controller's for anything else.
func (t *Tracer) observe(kind trace.Kind, obj any, initial bool, change string, filtered bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	resource := kindOf(obj)
	name := resource + "/" + o.GetName()
	fields := trace.Informer{Resource: resource, Initial: initial && kind == trace.InformerAdd, Change: change, Filtered: filtered}
	cause := Cause{Kind: trace.CauseEvent, Event: verb(kind) + " " + name}
	if initial {
		cause.Kind = trace.CauseInitial
	}
	if t.keys != nil {
		var keys []string
		if !filtered {
			keys = t.keys(obj)
		}
		t.observeMapped(kind, name, fields, cause, keys)
		return
	}
	echoName := o.GetName()
	if resource != echov1.Kind {
		owner := metav1.GetControllerOf(o)
		if owner == nil || owner.Kind != echov1.Kind || owner.APIVersion != echov1.GroupVersion.String() {
			t.emit(kind, name, fields) // no Echo controls it: nothing is queued
			return
		}
		echoName = owner.Name
		fields.MappedTo = trace.Object(echov1.Kind, owner.Name)
		cause.Event += " → " + trace.Object(echov1.Kind, owner.Name)
	}
	t.emit(kind, name, fields)
	if !filtered {
		t.causes.Add(o.GetNamespace()+"/"+echoName, cause)
	}
}

// observeMapped traces an event that the operator's map function turns into
// keys (none when a predicate stopped it), and remembers it as a cause of
// each one.
func (t *Tracer) observeMapped(kind trace.Kind, name string, fields trace.Informer, cause Cause, keys []string) {
	if len(keys) == 0 {
		t.emit(kind, name, fields) // no Echo to queue, or a predicate stopped it
		return
	}
	echoes := make([]string, len(keys))
	for i, k := range keys {
		echoes[i] = trace.Object(echov1.Kind, objectName(k))
	}
	fields.MappedTo = strings.Join(echoes, ", ")
	cause.Event += " → " + fields.MappedTo
	t.emit(kind, name, fields)
	for _, k := range keys {
		t.causes.Add(k, cause)
	}
}

// kindOf is the kind an informer event is about: Echo, ConfigMap or
// Deployment.
func kindOf(obj any) string {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return "ConfigMap"
	}
	if isEcho(obj) {
		return echov1.Kind
	}
	return "Deployment"
}

// verb is how an informer event is written in a cause: "UPDATE Echo/hello".
func verb(kind trace.Kind) string {
	switch kind {
	case trace.InformerAdd:
		return "ADD"
	case trace.InformerUpdate:
		return "UPDATE"
	}
	return "DELETE"
}

// isEcho tells an Echo (typed, or unstructured from a dynamic informer)
// from its children.
func isEcho(obj any) bool {
	switch o := obj.(type) {
	case *echov1.Echo:
		return true
	case interface{ GetKind() string }:
		return o.GetKind() == echov1.Kind
	}
	return false
}

// change says what an update changed: the spec (the generation moved) or
// only status and metadata.
func changeOf(old, obj any) string {
	o, n, ok := metas(old, obj)
	if !ok {
		return ""
	}
	if o.GetGeneration() != n.GetGeneration() {
		return "spec"
	}
	return "status"
}

func metas(old, obj any) (metav1.Object, metav1.Object, bool) {
	o, okO := old.(metav1.Object)
	n, okN := obj.(metav1.Object)
	return o, n, okO && okN
}
