// Package runtime is the Echo operator written with controller-runtime: the
// manager owns the informers (its cache), the workqueue and the workers;
// this file only says what to watch and how to reconcile one Echo.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/echo/instrument"
	"github.com/kkloud/rlab/operators/runtime/crtrace"
	"github.com/kkloud/rlab/operators/trace"
)

// EchoReconciler reconciles Echoes into Deployments.
type EchoReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// APIReader reads from the apiserver itself, bypassing the cache.
	APIReader client.Reader
	// Kube reaches the registry, which stands for an external system.
	Kube kubernetes.Interface
	// Recorder writes Events about Echoes, where kubectl describe shows them.
	Recorder events.EventRecorder

	Namespace string
	// Image is what Echo pods run.
	Image string
	// Workers is how many Echoes are reconciled at once
	// (MaxConcurrentReconciles); 0 is controller-runtime's default, 1.
	Workers int
	// WatchOwned makes a change to a Deployment reconcile its Echo.
	WatchOwned bool
	// Finalizer puts echo.Finalizer on Echoes.
	Finalizer bool
	// Warmup starts the controller's sources before it leads (EnableWarmup).
	Warmup bool
	// GenerationPredicate is where GenerationChangedPredicate filters
	// updates: echo.GenerationOff, GenerationOnEcho or GenerationEverywhere.
	GenerationPredicate string
	// The cache's ConfigMaps (echo.DefaultsCacheAll or DefaultsCacheNamed)
	// are set on the manager, in Run: the watch below is the same either way.

	// Trace is what the screen sees; not part of the operator.
	Trace *instrument.Tracer
}

var _ reconcile.Reconciler = &EchoReconciler{}

// The Role the sandbox grants this style in its namespace (sim/sandbox
// checks these markers against it):
// +kubebuilder:rbac:groups=kkloud.io,resources=echoes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=kkloud.io,resources=echoes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,resourceNames=echo-registry,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch

// Reconcile makes the world match one Echo. It is level-triggered: it reads
// the whole current state from the manager's cache and does not care which
// event brought it here.
func (r *EchoReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Step 1: fetch the Echo.
	e := &echov1.Echo{}
	if err := r.Get(ctx, req.NamespacedName, e); err != nil {
		// Deleted: its Deployment carries an ownerReference, so the garbage
		// collector removes it. Nothing for us to do.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	// Step 2: the finalizer. A deleted Echo is cleaned up and let go; the
	// rest get the finalizer and a registry entry.
	if !e.DeletionTimestamp.IsZero() {
		// Its Deployment carries an ownerReference: the garbage collector
		// removes it once the Echo is gone. The registry entry is ours.
		return ctrl.Result{}, r.finalize(ctx, e)
	}
	if r.Finalizer {
		if err := r.addFinalizer(ctx, e); err != nil {
			return ctrl.Result{}, err
		}
	}

	// Step 3: compute the desired Deployment. An Echo with no message
	// answers the namespace's default, from echo-defaults in the cache.
	var defaults *corev1.ConfigMap
	cm := &corev1.ConfigMap{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: echo.DefaultsName}, cm); {
	case err == nil:
		defaults = cm
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("get %s: %w", echo.DefaultsName, err)
	}
	desired := r.desiredDeployment(e, defaults)

	// Step 4: create or update. CreateOrUpdate reads from the cache, applies
	// the mutation, and writes only if something changed.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: desired.Name, Namespace: desired.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, d, func() error {
		if d.CreationTimestamp.IsZero() {
			d.Labels = desired.Labels
			d.Spec.Selector = desired.Spec.Selector
			if err := controllerutil.SetControllerReference(e, d, r.Scheme); err != nil {
				return err
			}
		} else if !metav1.IsControlledBy(d, e) {
			return errNotControlled // never take over what someone else owns
		}
		// Only what we own: overwriting the whole template would also wipe
		// the apiserver's defaults and cause an update every time.
		if echo.Drift(d, desired) != "" {
			d.Spec.Replicas = desired.Spec.Replicas
			d.Spec.Template = desired.Spec.Template
		}
		return nil
	})
	if errors.Is(err, errNotControlled) {
		// Say so on the Echo, and fail, so the request is retried with
		// backoff until the owner changes.
		msg := fmt.Sprintf(echo.MessageNotControlled, d.Name, e.Name)
		r.Recorder.Eventf(e, nil, corev1.EventTypeWarning, echo.ReasonNotControlled, "Reconcile", "%s", msg)
		return ctrl.Result{}, errors.New(msg)
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("create or update deployment: %w", err)
	}
	if op != controllerutil.OperationResultNone {
		instrument.ReportChanged(ctx, string(op))
	}

	// Step 5: write status.
	return ctrl.Result{}, r.updateStatus(ctx, e, d)
}

// errNotControlled stops CreateOrUpdate before it writes a Deployment that
// another owner, or nobody, controls.
var errNotControlled = errors.New("not controlled by this Echo")

// SetupWithManager says what to watch: Echoes (For), the Deployments they
// own (Owns, mapped to the owner through its controller reference) unless
// WatchOwned is off, and the ConfigMap echo-defaults (Watches, mapped to
// every Echo of its namespace). Every event is queued unless
// GenerationPredicate says otherwise.
func (r *EchoReconciler) SetupWithManager(mgr ctrl.Manager) error {
	var echoes, deployments, configMaps []predicate.Predicate
	switch r.GenerationPredicate {
	case echo.GenerationOnEcho:
		// The usual advice: an update that leaves metadata.generation as it
		// was, such as our own status write, does not requeue the Echo. Nor
		// does a finalizer or a label removed by hand.
		echoes = []predicate.Predicate{predicate.GenerationChangedPredicate{}}
	case echo.GenerationEverywhere:
		// As WithEventFilter(GenerationChangedPredicate{}) would: on the
		// Deployments too, whose status (ready pods) never moves their
		// generation, so status.ready is no longer kept up to date.
		echoes = []predicate.Predicate{predicate.GenerationChangedPredicate{}}
		deployments = []predicate.Predicate{predicate.GenerationChangedPredicate{}}
		// A ConfigMap has no generation: no update of echo-defaults passes.
		configMaps = []predicate.Predicate{predicate.GenerationChangedPredicate{}}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		// crtrace.Predicate traces every event and applies the filters.
		For(&echov1.Echo{}, builder.WithPredicates(crtrace.Predicate(r.Trace, echoes...))).
		Named("echo").
		WithOptions(controller.Options{
			MaxConcurrentReconciles: r.Workers,
			// A request that never answers must fail the reconcile (and be
			// retried) rather than hold the worker, and the key, forever.
			ReconciliationTimeout: echo.ReconcileTimeout,
			// The trace's own queue, so its depth and requeues are visible.
			UsePriorityQueue: ptr.To(false),
			NewQueue:         crtrace.RequestQueue(r.Trace),
			// Off (the default), a standby opens no watch until it leads,
			// and takes over with a cold cache.
			EnableWarmup: ptr.To(r.Warmup),
		})
	if r.WatchOwned {
		b = b.Owns(&appsv1.Deployment{}, builder.WithPredicates(crtrace.Predicate(r.Trace, deployments...)))
	}
	// A change to echo-defaults changes what every Echo with an empty
	// message wants: the map function queues every Echo of its namespace.
	// The predicate lets through the events of echo-defaults alone; it
	// filters events, it does not shrink the cache: this watch's informer
	// lists and watches every ConfigMap of the namespace unless the
	// manager's cache is narrowed to that name (--defaults-cache named).
	defaultsOnly := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == echo.DefaultsName })
	b = b.Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.EchoesOf),
		builder.WithPredicates(crtrace.Predicate(r.Trace.Mapped(r.echoKeys), append(configMaps, defaultsOnly)...)))
	return b.Complete(crtrace.Traced(r.Trace, r))
}

// EchoesOf maps a ConfigMap to a request for every Echo of its namespace,
// listed from the cache: the Echoes a change of echo-defaults queues.
func (r *EchoReconciler) EchoesOf(ctx context.Context, cm client.Object) []reconcile.Request {
	echoes := &echov1.EchoList{}
	if err := r.List(ctx, echoes, client.InNamespace(cm.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list echoes")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(echoes.Items))
	for _, e := range echoes.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&e)})
	}
	slices.SortFunc(reqs, func(a, b reconcile.Request) int { return strings.Compare(a.String(), b.String()) })
	return reqs
}

// echoKeys is EchoesOf for the trace: the keys of the requests.
func (r *EchoReconciler) echoKeys(obj any) []string {
	cm, ok := obj.(client.Object)
	if !ok {
		return nil
	}
	var keys []string
	for _, req := range r.EchoesOf(context.Background(), cm) {
		keys = append(keys, req.String())
	}
	return keys
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
		instrument.ReportFinalizer(ctx, trace.FinalizerAdded)
	}
	// The registry stands for an external system: nothing caches it, so it
	// is read from the apiserver.
	cm := &corev1.ConfigMap{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: echo.RegistryName}, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get registry: %w", err)
	}
	if err == nil && cm.Data[e.Name] == string(e.UID) {
		return nil
	}
	return echo.Register(ctx, r.Kube, r.Namespace, e.Name, string(e.UID))
}

// finalize runs the cleanup of a deleted Echo that carries our finalizer
// (whether or not this replica adds it), then removes the finalizer: the
// apiserver deletes the Echo once no finalizer is left.
func (r *EchoReconciler) finalize(ctx context.Context, e *echov1.Echo) error {
	if !controllerutil.ContainsFinalizer(e, echo.Finalizer) {
		return nil
	}
	if err := echo.Unregister(ctx, r.Kube, r.Namespace, e.Name); err != nil {
		return err
	}
	controllerutil.RemoveFinalizer(e, echo.Finalizer)
	if err := r.Update(ctx, e); err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	instrument.ReportFinalizer(ctx, trace.FinalizerRemoved)
	return nil
}

// desiredDeployment is the shared builder, labelled as this style's, with
// the image this operator was given.
// defaults is the echo-defaults ConfigMap, nil if there is none.
func (r *EchoReconciler) desiredDeployment(e *echov1.Echo, defaults *corev1.ConfigMap) *appsv1.Deployment {
	return echo.DesiredDeployment(e, defaults, Style.ManagedBy(), r.Image)
}

// updateStatus writes the status (echo.Status: ready, observedGeneration,
// conditions) through the status subresource, only when it changed,
// re-reading and retrying on a conflict.
func (r *EchoReconciler) updateStatus(ctx context.Context, e *echov1.Echo, d *appsv1.Deployment) error {
	want := echo.Status(e, d, e.Status.Conditions, time.Now())
	instrument.ReportStatus(ctx, want.Ready)
	if equality.Semantic.DeepEqual(e.Status, want) {
		return nil
	}
	reconciled := e.DeepCopy() // its spec and generation are what the status is about
	attempt := 0
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		attempt++
		if attempt > 1 {
			// The cache may still hold the version that conflicted: ask
			// the apiserver itself.
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
				return err
			}
		}
		// Over the conditions as they are now.
		e.Status = echo.Status(reconciled, d, e.Status.Conditions, time.Now())
		return r.Status().Update(ctx, e)
	})
	if err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	return nil
}
