// Package runtime is the Echo operator written with controller-runtime: the
// manager owns the informers (its cache), the workqueue and the workers;
// this file only says what to watch and how to reconcile one Echo.
package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/trace"
)

// ManagedBy labels what this style creates.
const ManagedBy = "echo-runtime"

// EchoReconciler reconciles Echoes into Deployments.
type EchoReconciler struct {
	client.Client
	// apiReader reads from the apiserver itself, bypassing the cache.
	apiReader client.Reader
	// kube reaches the registry, which stands for an external system.
	kube      kubernetes.Interface
	Namespace string
	finalizer bool // put echo.Finalizer on Echoes

	causes *echo.Causes
	depth  *echo.Depth
	trace  *echo.Emitter
	log    *slog.Logger
	ids    atomic.Int64
}

// SetupWithManager says what to watch: Echoes (For), and the Deployments they
// own (Owns, mapped to the owner through its controller reference) unless
// watchOwned is off. The predicates only record each event as the cause of
// the reconcile it will trigger; they let every event through.
func (r *EchoReconciler) SetupWithManager(mgr ctrl.Manager, watchOwned bool) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("echo").
		For(&echov1.Echo{}, builder.WithPredicates(r.observe(echov1.Kind))).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: 1,
			// Our own queue so its depth and requeues are visible.
			UsePriorityQueue: ptr.To(false),
			NewQueue: func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
				return echo.NewTracedQueue(name, rl, func(req reconcile.Request) string { return req.String() },
					r.causes, r.trace, r.Namespace, r.depth)
			},
		})
	if watchOwned {
		b = b.Owns(&appsv1.Deployment{}, builder.WithPredicates(r.observe("Deployment")))
	}
	return b.Complete(reconcile.Func(r.traced))
}

// observe is a predicate that traces each event and records its cause under
// the key the event will be enqueued as.
func (r *EchoReconciler) observe(resource string) predicate.Funcs {
	record := func(kind trace.Kind, obj client.Object, initial bool, change string) {
		fields := map[string]any{"resource": resource}
		if kind == trace.InformerAdd {
			fields["initial"] = initial
		}
		if change != "" {
			fields["change"] = change
		}
		name := resource + "/" + obj.GetName()
		verb := map[trace.Kind]string{trace.InformerAdd: "ADD", trace.InformerUpdate: "UPDATE", trace.InformerDelete: "DELETE"}[kind]
		cause := echo.Cause{Kind: trace.CauseEvent, Event: verb + " " + name}
		echoName := obj.GetName()
		if resource != echov1.Kind {
			owner := metav1.GetControllerOf(obj)
			if owner == nil || owner.Kind != echov1.Kind {
				r.trace.Emit(kind, obj.GetNamespace(), name, fields)
				return // Owns() ignores it too
			}
			echoName = owner.Name
			fields["mapped_to"] = "Echo/" + owner.Name
			cause.Event += " → Echo/" + owner.Name
		}
		if initial {
			cause.Kind = trace.CauseInitial
		}
		r.trace.Emit(kind, obj.GetNamespace(), name, fields)
		// The handler behind this predicate queues the key next.
		r.causes.Add(obj.GetNamespace()+"/"+echoName, cause)
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			record(trace.InformerAdd, e.Object, e.IsInInitialList, "")
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			change := "status"
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				change = "spec"
			}
			record(trace.InformerUpdate, e.ObjectNew, false, change)
			return true
		},
		DeleteFunc:  func(e event.DeleteEvent) bool { record(trace.InformerDelete, e.Object, false, ""); return true },
		GenericFunc: func(event.GenericEvent) bool { return true },
	}
}

// traced wraps Reconcile with the start/end events and their cause.
func (r *EchoReconciler) traced(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	id := r.ids.Add(1)
	key := req.String()
	ns, name := req.Namespace, "Echo/"+req.Name
	r.trace.Emit(trace.QueueGet, ns, name, map[string]any{"key": key, "depth": r.depth.Value()})
	start := time.Now()
	r.trace.Emit(trace.ReconcileStart, ns, name, echo.StartFields(id, r.causes.Take(key)))

	rctx, cancel := context.WithTimeout(ctx, echo.ReconcileTimeout)
	changed, status, err := r.Reconcile(rctx, req)
	cancel()

	end := map[string]any{"id": id, "duration_ms": float64(time.Since(start).Microseconds()) / 1000,
		"changed": changed, "status": status, "result": "ok"}
	log := r.log.With("echo", req.Name, "ns", ns, "changed", changed, "ready", status, "duration_ms", end["duration_ms"])
	if err != nil {
		end["result"], end["error"] = "error", err.Error()
		log.Error("reconcile failed", "error", err)
	} else {
		log.Info("reconcile done")
	}
	r.trace.Emit(trace.ReconcileEnd, ns, name, end)
	r.trace.Emit(trace.QueueDone, ns, name, map[string]any{"key": key, "depth": r.depth.Value()})
	// Returning the error makes controller-runtime requeue with backoff.
	return reconcile.Result{}, err
}

// Reconcile makes the world match one Echo. It is level-triggered: it reads
// the whole current state from the manager's cache and does not care which
// event brought it here.
func (r *EchoReconciler) Reconcile(ctx context.Context, req reconcile.Request) (changed, status string, err error) {
	changed = "none"

	// Step 1: fetch the Echo.
	e := &echov1.Echo{}
	if err := r.Get(ctx, req.NamespacedName, e); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted: its Deployment carries an ownerReference, so the
			// garbage collector removes it. Nothing for us to do.
			return changed, "", nil
		}
		return changed, "", fmt.Errorf("get echo: %w", err)
	}

	// Step 2: the finalizer. A deleted Echo is cleaned up and let go; the
	// rest get the finalizer and a registry entry.
	if !e.DeletionTimestamp.IsZero() {
		// Its Deployment carries an ownerReference: the garbage collector
		// removes it once the Echo is gone. The registry entry is ours.
		return changed, "", r.finalize(ctx, e)
	}
	if r.finalizer {
		if err := r.addFinalizer(ctx, e); err != nil {
			return changed, "", err
		}
	}

	// Step 3: compute the desired Deployment.
	desired := desiredDeployment(e)

	// Step 4: create or update. CreateOrUpdate reads from the cache, applies
	// the mutation, and writes only if something changed.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: desired.Name, Namespace: desired.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, d, func() error {
		if d.CreationTimestamp.IsZero() {
			d.Labels = desired.Labels
			d.Spec.Selector = desired.Spec.Selector
		}
		// Only what we own: overwriting the whole template would also wipe
		// the apiserver's defaults and cause an update every time.
		if echo.Drift(d, desired) != "" {
			d.Spec.Replicas = desired.Spec.Replicas
			d.Spec.Template = desired.Spec.Template
		}
		return controllerutil.SetControllerReference(e, d, r.Scheme())
	})
	if err != nil {
		return changed, "", fmt.Errorf("create or update deployment: %w", err)
	}
	if op != controllerutil.OperationResultNone {
		changed = string(op)
	}

	// Step 5: write status.
	status, err = r.updateStatus(ctx, e, d)
	return changed, status, err
}

// addFinalizer puts the finalizer on the Echo before anything is
// registered, so no registry entry can outlive its Echo, then lists the
// Echo in the registry if it is not there yet.
func (r *EchoReconciler) addFinalizer(ctx context.Context, e *echov1.Echo) error {
	// AddFinalizer only changes our copy; Update sends it with the
	// resourceVersion we read (409 if anyone wrote since: retried).
	if controllerutil.AddFinalizer(e, echo.Finalizer) {
		if err := r.Update(ctx, e); err != nil {
			return fmt.Errorf("add finalizer: %w", err)
		}
		r.trace.Emit(trace.Finalizer, r.Namespace, "Echo/"+e.Name, map[string]any{"action": "added", "finalizer": echo.Finalizer})
	}
	// The registry stands for an external system: nothing caches it, so it
	// is read from the apiserver.
	cm := &corev1.ConfigMap{}
	err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: echo.RegistryName}, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get registry: %w", err)
	}
	if err == nil && cm.Data[e.Name] == string(e.UID) {
		return nil
	}
	return echo.Register(ctx, r.kube, r.Namespace, e.Name, string(e.UID))
}

// finalize runs the cleanup of a deleted Echo that carries our finalizer
// (whether or not this replica adds it), then removes the finalizer: the
// apiserver deletes the Echo once no finalizer is left.
func (r *EchoReconciler) finalize(ctx context.Context, e *echov1.Echo) error {
	if !controllerutil.ContainsFinalizer(e, echo.Finalizer) {
		return nil
	}
	if err := echo.Unregister(ctx, r.kube, r.Namespace, e.Name); err != nil {
		return err
	}
	controllerutil.RemoveFinalizer(e, echo.Finalizer)
	if err := r.Update(ctx, e); err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	r.trace.Emit(trace.Finalizer, r.Namespace, "Echo/"+e.Name, map[string]any{"action": "removed", "finalizer": echo.Finalizer})
	return nil
}

// desiredDeployment is the shared builder, labelled as this style's.
func desiredDeployment(e *echov1.Echo) *appsv1.Deployment {
	return echo.DesiredDeployment(e, ManagedBy)
}

// updateStatus writes status.ready through the status subresource, only when
// it changed, re-reading and retrying on a conflict.
func (r *EchoReconciler) updateStatus(ctx context.Context, e *echov1.Echo, d *appsv1.Deployment) (string, error) {
	ready := echo.Ready(d, e.Spec)
	if e.Status.Ready == ready {
		return ready, nil
	}
	attempt := 0
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		attempt++
		if attempt > 1 {
			// The cache may still hold the version that conflicted: ask
			// the apiserver itself.
			if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
				return err
			}
		}
		e.Status.Ready = ready
		return r.Status().Update(ctx, e)
	})
	if err != nil {
		return ready, fmt.Errorf("update status: %w", err)
	}
	return ready, nil
}
