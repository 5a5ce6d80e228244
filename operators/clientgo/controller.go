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
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/echo/instrument"
	"github.com/kkloud/rlab/operators/trace"
)

// Controller reconciles Echoes into Deployments in one namespace.
type Controller struct {
	kube      kubernetes.Interface
	dyn       dynamic.Interface
	namespace string
	image     string // what Echo pods run
	finalizer bool   // put echo.Finalizer on Echoes

	// Listers read from the informers' caches, never from the apiserver.
	echoLister   cache.GenericNamespaceLister
	echoSynced   cache.InformerSynced
	deployLister appslisters.DeploymentNamespaceLister
	deploySynced cache.InformerSynced
	// The namespace's echo-defaults ConfigMap: its informer lists and
	// watches that one ConfigMap alone (see Run).
	defaultsLister corelisters.ConfigMapNamespaceLister
	defaultsSynced cache.InformerSynced

	// queue holds "namespace/name" keys of Echoes to reconcile. A key is in
	// it at most once: five events before a worker gets to it are one
	// reconcile.
	queue workqueue.TypedRateLimitingInterface[string]
	// recorder writes Events about Echoes, where kubectl describe shows them.
	recorder record.EventRecorder

	trace *instrument.Tracer // what the screen sees; not part of the operator
	log   *slog.Logger
}

// NewController wires the informers' event handlers to the workqueue.
// Deployment events are mapped to their owning Echo only when watchOwned:
// without that, a hand edit of a Deployment is never noticed. A change to
// the ConfigMap echo-defaults, from defaultsInformers (a factory whose
// informers ask for that ConfigMap alone), queues every Echo.
func NewController(kube kubernetes.Interface, dyn dynamic.Interface, namespace, image string,
	kubeInformers, defaultsInformers informers.SharedInformerFactory, echoInformers dynamicinformer.DynamicSharedInformerFactory,
	recorder record.EventRecorder, watchOwned, finalizer bool, tracer *instrument.Tracer, log *slog.Logger) (*Controller, error) {
	echoInformer := echoInformers.ForResource(echov1.Resource)
	deployInformer := kubeInformers.Apps().V1().Deployments()
	defaultsInformer := defaultsInformers.Core().V1().ConfigMaps()
	c := &Controller{
		kube:           kube,
		dyn:            dyn,
		namespace:      namespace,
		image:          image,
		finalizer:      finalizer,
		echoLister:     echoInformer.Lister().ByNamespace(namespace),
		echoSynced:     echoInformer.Informer().HasSynced,
		deployLister:   deployInformer.Lister().Deployments(namespace),
		deploySynced:   deployInformer.Informer().HasSynced,
		defaultsLister: defaultsInformer.Lister().ConfigMaps(namespace),
		defaultsSynced: defaultsInformer.Informer().HasSynced,
		queue:          instrument.NewQueue(tracer, "echo", workqueue.DefaultTypedControllerRateLimiter[string](), func(k string) string { return k }),
		recorder:       recorder,
		trace:          tracer,
		log:            log,
	}

	log.Info("setting up event handlers")
	// Any change to an Echo, its spec or its status, queues it.
	if _, err := echoInformer.Informer().AddEventHandler(tracer.Handler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueEcho,
		UpdateFunc: func(old, obj any) { c.enqueueEcho(obj) },
		DeleteFunc: c.enqueueEcho,
	})); err != nil {
		return nil, fmt.Errorf("echo event handler: %w", err)
	}
	// A change to echo-defaults changes what every Echo with an empty
	// message wants: queue every Echo of the namespace (EchoKeys). The
	// informer sees no other ConfigMap, so the handler need not look at
	// the name.
	if _, err := defaultsInformer.Informer().AddEventHandler(tracer.Mapped(c.EchoKeys).Handler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueEchoes,
		UpdateFunc: func(old, obj any) {
			if old.(*corev1.ConfigMap).ResourceVersion == obj.(*corev1.ConfigMap).ResourceVersion {
				return // a periodic resync sends updates that change nothing
			}
			c.enqueueEchoes(obj)
		},
		DeleteFunc: c.enqueueEchoes,
	})); err != nil {
		return nil, fmt.Errorf("configmap event handler: %w", err)
	}
	if !watchOwned {
		return c, nil
	}
	// A change to a Deployment queues the Echo that controls it, so that a
	// hand edit or a deletion is repaired.
	if _, err := deployInformer.Informer().AddEventHandler(tracer.Handler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.handleObject,
		UpdateFunc: func(old, obj any) {
			if old.(*appsv1.Deployment).ResourceVersion == obj.(*appsv1.Deployment).ResourceVersion {
				return // a periodic resync sends updates that change nothing
			}
			c.handleObject(obj)
		},
		DeleteFunc: c.handleObject,
	})); err != nil {
		return nil, fmt.Errorf("deployment event handler: %w", err)
	}
	return c, nil
}

// Run waits for the caches, then runs workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()

	c.log.Info("waiting for informer caches to sync")
	if ok := cache.WaitForCacheSync(ctx.Done(), c.echoSynced, c.deploySynced, c.defaultsSynced); !ok {
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

	// A request that never answers must fail the reconcile (and be
	// retried) rather than hold this worker, and the key, forever.
	ctx, cancel := context.WithTimeout(ctx, echo.ReconcileTimeout)
	defer cancel()
	if err := c.trace.Reconcile(ctx, key, c.reconcile); err != nil {
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// enqueueEcho puts an Echo's namespace/name key on the queue.
func (c *Controller) enqueueEcho(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// EchoKeys maps a ConfigMap to the keys of every Echo of the namespace, from
// the Echo lister (the cache): the Echoes a change of echo-defaults queues.
func (c *Controller) EchoKeys(any) []string {
	objs, err := c.echoLister.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(err)
		return nil
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, c.namespace+"/"+o.(metav1.Object).GetName())
	}
	slices.Sort(keys)
	return keys
}

// enqueueEchoes queues every Echo of the namespace.
func (c *Controller) enqueueEchoes(obj any) {
	for _, k := range c.EchoKeys(obj) {
		c.queue.Add(k)
	}
}

// handleObject queues the Echo that controls a Deployment, if any: the
// operator reconciles Echoes, not Deployments. A Deployment nobody (or
// someone else) controls is none of our business.
func (c *Controller) handleObject(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj // deleted while the watch was down
	}
	d, ok := obj.(metav1.Object)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("not an object: %T", obj))
		return
	}
	owner := metav1.GetControllerOf(d)
	if owner == nil || owner.Kind != echov1.Kind || owner.APIVersion != echov1.GroupVersion.String() {
		return
	}
	c.queue.Add(d.GetNamespace() + "/" + owner.Name)
}

// reconcile makes the world match one Echo. It is level-triggered: it reads
// the whole current state from the caches and does not care which event
// brought it here.
func (c *Controller) reconcile(ctx context.Context, key string) error {
	_, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return fmt.Errorf("bad key %q: %w", key, err)
	}

	// Step 1: fetch the Echo.
	obj, err := c.echoLister.Get(name)
	if apierrors.IsNotFound(err) {
		// Deleted: its Deployment carries an ownerReference, so the garbage
		// collector removes it. Nothing for us to do.
		return nil
	}
	if err != nil {
		return fmt.Errorf("get echo: %w", err)
	}
	e := &echov1.Echo{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, e); err != nil {
		return fmt.Errorf("decode echo: %w", err)
	}

	// Step 2: the finalizer. A deleted Echo is cleaned up and let go; the
	// rest get the finalizer and a registry entry.
	if e.DeletionTimestamp != nil {
		// Its Deployment carries an ownerReference: the garbage collector
		// removes it once the Echo is gone. The registry entry is ours.
		return c.finalize(ctx, e)
	}
	if c.finalizer {
		if err := c.addFinalizer(ctx, e); err != nil {
			return err
		}
	}

	// Step 3: compute the desired Deployment. An Echo with no message
	// answers the namespace's default, from echo-defaults in the cache.
	defaults, err := c.defaultsLister.Get(echo.DefaultsName)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get %s: %w", echo.DefaultsName, err)
	}
	desired := c.desiredDeployment(e, defaults)

	// Step 4: create or update.
	d, err := c.deployLister.Get(desired.Name)
	switch {
	case apierrors.IsNotFound(err):
		d, err = c.kube.AppsV1().Deployments(c.namespace).Create(ctx, desired, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create deployment: %w", err)
		}
		instrument.ReportChanged(ctx, "created")
	case err != nil:
		return fmt.Errorf("get deployment: %w", err)
	case !metav1.IsControlledBy(d, e):
		// Never take over what someone else owns: say so on the Echo, and
		// fail, so the key is retried with backoff until the owner changes.
		msg := fmt.Sprintf(echo.MessageNotControlled, d.Name, e.Name)
		c.recorder.Event(e, corev1.EventTypeWarning, echo.ReasonNotControlled, msg)
		return errors.New(msg)
	case echo.Drift(d, desired) != "":
		// Never modify the cache's copy.
		upd := d.DeepCopy()
		upd.Spec.Replicas = desired.Spec.Replicas
		upd.Spec.Template = desired.Spec.Template
		d, err = c.kube.AppsV1().Deployments(c.namespace).Update(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update deployment: %w", err)
		}
		instrument.ReportChanged(ctx, "updated")
	}

	// Step 5: write status.
	return c.updateStatus(ctx, e, d)
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
		instrument.ReportFinalizer(ctx, trace.FinalizerAdded)
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
	instrument.ReportFinalizer(ctx, trace.FinalizerRemoved)
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

// desiredDeployment is the shared builder, labelled as this style's, with
// the image this operator was given.
// defaults is the echo-defaults ConfigMap, nil if there is none.
func (c *Controller) desiredDeployment(e *echov1.Echo, defaults *corev1.ConfigMap) *appsv1.Deployment {
	return echo.DesiredDeployment(e, defaults, Style.ManagedBy(), c.image)
}

// updateStatus writes the status (echo.Status: ready, observedGeneration,
// conditions) through the status subresource, only when it changed. On a
// conflict (someone wrote the Echo since our cache saw it) it re-reads from
// the apiserver and tries again.
func (c *Controller) updateStatus(ctx context.Context, e *echov1.Echo, d *appsv1.Deployment) error {
	want := echo.Status(e, d, e.Status.Conditions, time.Now())
	instrument.ReportStatus(ctx, want.Ready)
	if equality.Semantic.DeepEqual(e.Status, want) {
		return nil
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
		// What we reconciled (e's generation), over the conditions as
		// they are now.
		upd.Status = echo.Status(e, d, cur.Status.Conditions, time.Now())
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(upd)
		if err != nil {
			return err
		}
		_, err = echoes.UpdateStatus(ctx, &unstructured.Unstructured{Object: u}, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	return nil
}
