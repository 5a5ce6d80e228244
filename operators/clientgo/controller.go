// Package clientgo is the Echo operator written with raw client-go, in the
// manner of kubernetes/sample-controller: informers fill caches and call event
// handlers, the handlers put keys on a rate-limiting workqueue, and workers
// take keys off it and reconcile. Every piece that controller-runtime hides
// is written out here.
package clientgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/trace"
)

// ManagedBy labels what this style creates.
const ManagedBy = "echo-clientgo"

// Controller reconciles Echoes into Deployments in one namespace.
type Controller struct {
	kube      kubernetes.Interface
	dyn       dynamic.Interface
	namespace string
	finalizer bool // put echo.Finalizer on Echoes

	// Listers read from the informers' caches, never from the apiserver.
	echoLister   cache.GenericNamespaceLister
	echoSynced   cache.InformerSynced
	deployLister appslisters.DeploymentNamespaceLister
	deploySynced cache.InformerSynced

	// queue holds "namespace/name" keys of Echoes to reconcile. A key is in
	// it at most once: five events before a worker gets to it are one
	// reconcile, and causes remembers all five.
	queue  workqueue.TypedRateLimitingInterface[string]
	causes *echo.Causes
	depth  *echo.Depth

	trace *echo.Emitter
	log   *slog.Logger
	ids   atomic.Int64
}

// NewController wires the informers' event handlers to the workqueue.
// Deployment events are mapped to their owning Echo only when watchOwned:
// without that, a hand edit of a Deployment is never noticed.
func NewController(kube kubernetes.Interface, dyn dynamic.Interface, namespace string,
	kubeInformers informers.SharedInformerFactory, echoInformers dynamicinformer.DynamicSharedInformerFactory,
	watchOwned, finalizer bool, em *echo.Emitter, log *slog.Logger) (*Controller, error) {
	echoInformer := echoInformers.ForResource(echov1.Resource)
	deployInformer := kubeInformers.Apps().V1().Deployments()
	c := &Controller{
		kube:         kube,
		dyn:          dyn,
		namespace:    namespace,
		finalizer:    finalizer,
		echoLister:   echoInformer.Lister().ByNamespace(namespace),
		echoSynced:   echoInformer.Informer().HasSynced,
		deployLister: deployInformer.Lister().Deployments(namespace),
		deploySynced: deployInformer.Informer().HasSynced,
		causes:       echo.NewCauses(),
		depth:        &echo.Depth{},
		trace:        em,
		log:          log,
	}
	c.queue = echo.NewTracedQueue("echo", workqueue.DefaultTypedControllerRateLimiter[string](),
		func(k string) string { return k }, c.causes, em, namespace, c.depth)

	if _, err := echoInformer.Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) { c.enqueueEcho(trace.InformerAdd, obj, initial) },
		UpdateFunc: func(old, obj any) {
			c.enqueueEcho(trace.InformerUpdate, obj, false, echoChange(old, obj))
		},
		DeleteFunc: func(obj any) { c.enqueueEcho(trace.InformerDelete, obj, false) },
	}); err != nil {
		return nil, fmt.Errorf("echo event handler: %w", err)
	}
	if !watchOwned {
		return c, nil
	}
	if _, err := deployInformer.Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) { c.handleDeployment(trace.InformerAdd, obj, initial) },
		UpdateFunc: func(old, obj any) {
			o, n := old.(*appsv1.Deployment), obj.(*appsv1.Deployment)
			if o.ResourceVersion == n.ResourceVersion {
				return // a periodic resync, not a change
			}
			c.handleDeployment(trace.InformerUpdate, obj, false)
		},
		DeleteFunc: func(obj any) { c.handleDeployment(trace.InformerDelete, obj, false) },
	}); err != nil {
		return nil, fmt.Errorf("deployment event handler: %w", err)
	}
	return c, nil
}

// echoChange says what an Echo update changed: the spec (generation bumped)
// or only status/metadata, which still triggers a reconcile here.
func echoChange(old, obj any) string {
	o, okO := old.(*unstructured.Unstructured)
	n, okN := obj.(*unstructured.Unstructured)
	if !okO || !okN {
		return ""
	}
	if o.GetGeneration() != n.GetGeneration() {
		return "spec"
	}
	return "status"
}

func verb(kind trace.Kind) string {
	switch kind {
	case trace.InformerAdd:
		return "ADD"
	case trace.InformerUpdate:
		return "UPDATE"
	default:
		return "DELETE"
	}
}

// enqueueEcho puts an Echo's key on the queue, remembering which event did.
func (c *Controller) enqueueEcho(kind trace.Kind, obj any, initial bool, change ...string) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	name := "Echo/" + objectName(key)
	fields := map[string]any{"resource": echov1.Kind}
	if kind == trace.InformerAdd {
		fields["initial"] = initial
	}
	if len(change) > 0 && change[0] != "" {
		fields["change"] = change[0]
	}
	c.trace.Emit(kind, c.namespace, name, fields)
	cause := echo.Cause{Kind: trace.CauseEvent, Event: verb(kind) + " " + name}
	if initial {
		cause.Kind = trace.CauseInitial
	}
	c.add(key, cause)
}

// add records the cause and queues the key.
func (c *Controller) add(key string, cause echo.Cause) {
	c.causes.Add(key, cause)
	c.queue.Add(key)
}

// handleDeployment maps a Deployment event to the Echo that controls it, if
// any, and queues that Echo: the operator reconciles Echoes, not Deployments.
func (c *Controller) handleDeployment(kind trace.Kind, obj any, initial bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	owner := metav1.GetControllerOf(d)
	fields := map[string]any{"resource": "Deployment"}
	if kind == trace.InformerAdd {
		fields["initial"] = initial
	}
	if owner == nil || owner.Kind != echov1.Kind || owner.APIVersion != echov1.GroupVersion.String() {
		c.trace.Emit(kind, c.namespace, "Deployment/"+d.Name, fields)
		return
	}
	echoName := "Echo/" + owner.Name
	fields["mapped_to"] = echoName
	c.trace.Emit(kind, c.namespace, "Deployment/"+d.Name, fields)
	cause := echo.Cause{Kind: trace.CauseEvent, Event: verb(kind) + " Deployment/" + d.Name + " → " + echoName}
	if initial {
		cause.Kind = trace.CauseInitial
	}
	c.add(d.Namespace+"/"+owner.Name, cause)
}

// Run waits for the caches, then runs workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()

	c.log.Info("waiting for informer caches to sync")
	if ok := cache.WaitForCacheSync(ctx.Done(), c.echoSynced, c.deploySynced); !ok {
		return errors.New("failed to wait for caches to sync")
	}
	c.log.Info("starting workers", "workers", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.runWorker, time.Second) })
	}
	<-ctx.Done()
	c.log.Info("shutting down workers")
	// A replica that lost the Lease must stop acting before it goes: shut
	// the queue and wait for the reconcile in flight (its context is
	// cancelled too) to return.
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// runWorker processes keys until the queue shuts down.
func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem takes one key, reconciles it, and tells the queue how
// it went: Forget on success, AddRateLimited (growing backoff) on error.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	// Done lets the queue hand this key out again; until then a new event
	// for it only marks it dirty, so no two workers reconcile one Echo.
	defer c.queue.Done(key)

	id := c.ids.Add(1)
	ns, name := c.namespace, "Echo/"+objectName(key)
	c.trace.Emit(trace.QueueGet, ns, name, map[string]any{"key": key, "depth": c.depth.Value()})
	start := time.Now()
	c.trace.Emit(trace.ReconcileStart, ns, name, echo.StartFields(id, c.causes.Take(key)))

	rctx, cancel := context.WithTimeout(ctx, echo.ReconcileTimeout)
	changed, status, err := c.reconcile(rctx, key)
	cancel()

	end := map[string]any{"id": id, "duration_ms": float64(time.Since(start).Microseconds()) / 1000,
		"changed": changed, "status": status, "result": "ok"}
	log := c.log.With("echo", objectName(key), "ns", ns, "changed", changed, "ready", status,
		"duration_ms", end["duration_ms"])
	if err != nil {
		end["result"], end["error"] = "error", err.Error()
		c.trace.Emit(trace.ReconcileEnd, ns, name, end)
		log.Error("reconcile failed", "error", err)
		c.queue.AddRateLimited(key)
	} else {
		c.trace.Emit(trace.ReconcileEnd, ns, name, end)
		log.Info("reconcile done")
		c.queue.Forget(key)
	}
	c.trace.Emit(trace.QueueDone, ns, name, map[string]any{"key": key, "depth": c.depth.Value()})
	return true
}

// reconcile makes the world match one Echo. It is level-triggered: it reads
// the whole current state from the caches and does not care which event
// brought it here.
func (c *Controller) reconcile(ctx context.Context, key string) (changed, status string, err error) {
	changed = "none"
	_, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return changed, "", fmt.Errorf("bad key %q: %w", key, err)
	}

	// Step 1: fetch the Echo.
	obj, err := c.echoLister.Get(name)
	if apierrors.IsNotFound(err) {
		// Deleted: its Deployment carries an ownerReference, so the garbage
		// collector removes it. Nothing for us to do.
		return changed, "", nil
	}
	if err != nil {
		return changed, "", fmt.Errorf("get echo: %w", err)
	}
	e := &echov1.Echo{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, e); err != nil {
		return changed, "", fmt.Errorf("decode echo: %w", err)
	}

	// Step 2: the finalizer. A deleted Echo is cleaned up and let go; the
	// rest get the finalizer and a registry entry.
	if e.DeletionTimestamp != nil {
		// Its Deployment carries an ownerReference: the garbage collector
		// removes it once the Echo is gone. The registry entry is ours.
		return changed, "", c.finalize(ctx, e)
	}
	if c.finalizer {
		if err := c.addFinalizer(ctx, e); err != nil {
			return changed, "", err
		}
	}

	// Step 3: compute the desired Deployment.
	desired := desiredDeployment(e)

	// Step 4: create or update.
	d, err := c.deployLister.Get(desired.Name)
	switch {
	case apierrors.IsNotFound(err):
		d, err = c.kube.AppsV1().Deployments(c.namespace).Create(ctx, desired, metav1.CreateOptions{})
		if err != nil {
			return changed, "", fmt.Errorf("create deployment: %w", err)
		}
		changed = "created"
	case err != nil:
		return changed, "", fmt.Errorf("get deployment: %w", err)
	case !metav1.IsControlledBy(d, e):
		// Never take over what someone else owns.
		return changed, "", fmt.Errorf("deployment %s exists and is not controlled by Echo %s", d.Name, e.Name)
	case echo.Drift(d, desired) != "":
		// Never modify the cache's copy.
		upd := d.DeepCopy()
		upd.Spec.Replicas = desired.Spec.Replicas
		upd.Spec.Template = desired.Spec.Template
		d, err = c.kube.AppsV1().Deployments(c.namespace).Update(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			return changed, "", fmt.Errorf("update deployment: %w", err)
		}
		changed = "updated"
	}

	// Step 5: write status.
	status, err = c.updateStatus(ctx, e, d)
	return changed, status, err
}

// addFinalizer puts the finalizer on the Echo before anything is
// registered, so no registry entry can outlive its Echo, then lists the
// Echo in the registry if it is not there yet.
func (c *Controller) addFinalizer(ctx context.Context, e *echov1.Echo) error {
	if !echo.HasFinalizer(e.Finalizers) {
		fins := append(slices.Clone(e.Finalizers), echo.Finalizer)
		if err := c.patchFinalizers(ctx, e, fins); err != nil {
			return fmt.Errorf("add finalizer: %w", err)
		}
		c.trace.Emit(trace.Finalizer, c.namespace, "Echo/"+e.Name, map[string]any{"action": "added", "finalizer": echo.Finalizer})
	}
	// The registry stands for an external system: nothing caches it, so it
	// is read from the apiserver.
	cm, err := c.kube.CoreV1().ConfigMaps(c.namespace).Get(ctx, echo.RegistryName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get registry: %w", err)
	}
	if cm != nil && cm.Data[e.Name] == string(e.UID) {
		return nil
	}
	return echo.Register(ctx, c.kube, c.namespace, e.Name, string(e.UID))
}

// finalize runs the cleanup of a deleted Echo that carries our finalizer
// (whether or not this replica adds it), then removes the finalizer: the
// apiserver deletes the Echo once no finalizer is left.
func (c *Controller) finalize(ctx context.Context, e *echov1.Echo) error {
	if !echo.HasFinalizer(e.Finalizers) {
		return nil
	}
	if err := echo.Unregister(ctx, c.kube, c.namespace, e.Name); err != nil {
		return err
	}
	if err := c.patchFinalizers(ctx, e, echo.WithoutFinalizer(e.Finalizers)); err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	c.trace.Emit(trace.Finalizer, c.namespace, "Echo/"+e.Name, map[string]any{"action": "removed", "finalizer": echo.Finalizer})
	return nil
}

// patchFinalizers writes the Echo's finalizer list, only if it is still at
// the resourceVersion we read (409 otherwise: the reconcile fails and is
// retried on fresh data).
func (c *Controller) patchFinalizers(ctx context.Context, e *echov1.Echo, fins []string) error {
	patch, err := echo.FinalizersPatch(e.ResourceVersion, fins)
	if err != nil {
		return err
	}
	u, err := c.dyn.Resource(echov1.Resource).Namespace(c.namespace).
		Patch(ctx, e.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	// Carry on with what the apiserver stored: the status write needs its
	// resourceVersion.
	stored := &echov1.Echo{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, stored); err != nil {
		return fmt.Errorf("decode echo: %w", err)
	}
	*e = *stored
	return nil
}

// desiredDeployment is the shared builder, labelled as this style's.
func desiredDeployment(e *echov1.Echo) *appsv1.Deployment {
	return echo.DesiredDeployment(e, ManagedBy)
}

// updateStatus writes status.ready through the status subresource, only when
// it changed. On a conflict (someone wrote the Echo since our cache saw it)
// it re-reads from the apiserver and tries again.
func (c *Controller) updateStatus(ctx context.Context, e *echov1.Echo, d *appsv1.Deployment) (string, error) {
	ready := echo.Ready(d, e.Spec)
	if e.Status.Ready == ready {
		return ready, nil
	}
	echoes := c.dyn.Resource(echov1.Resource).Namespace(c.namespace)
	attempt := 0
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		attempt++
		cur := e
		if attempt > 1 {
			u, err := echoes.Get(ctx, e.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur = &echov1.Echo{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cur); err != nil {
				return err
			}
		}
		upd := cur.DeepCopy()
		upd.Status.Ready = ready
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(upd)
		if err != nil {
			return err
		}
		_, err = echoes.UpdateStatus(ctx, &unstructured.Unstructured{Object: u}, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return ready, fmt.Errorf("update status: %w", err)
	}
	return ready, nil
}

func objectName(key string) string {
	_, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return key
	}
	return name
}
