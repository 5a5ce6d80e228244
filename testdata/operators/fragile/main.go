// Command fragile is an Echo operator over client-go informers, kept as a
// fixture of `rlab check --chaos`. Each of its mistakes (--bug) passes every
// normal check and fails one chaos scenario, because the mistake only shows
// when the apiserver, the cache or the process misbehaves:
//
//	generate-name  creates echo-<name> when its cache shows none and, when
//	               that name is taken, another with generateName: under a
//	               stale view it makes duplicates (chaos-stale)
//	memory         skips an Echo whose generation it remembers having applied,
//	               and at start remembers every Echo that has a Deployment:
//	               edits made while it was down after a crash between two
//	               writes are never applied (chaos-crash)
//	drop-conflict  drops a 409 instead of retrying, trusting that the change
//	               behind it brings an event: when none does, the refused
//	               writes are lost (chaos-conflict)
//	none           none of them
//
// It finds its cluster the way rlab hands it over: $KUBECONFIG,
// $WATCH_NAMESPACE and $ECHO_IMAGE. It elects no leader.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
)

// The mistakes --bug takes.
const (
	bugNone         = "none"
	bugGenerateName = "generate-name"
	bugMemory       = "memory"
	bugDropConflict = "drop-conflict"
)

func main() {
	bug := flag.String("bug", bugNone, "the mistake to make: generate-name, memory, drop-conflict or none")
	flag.Parse()
	if !slices.Contains([]string{bugNone, bugGenerateName, bugMemory, bugDropConflict}, *bug) {
		fmt.Fprintf(os.Stderr, "fragile: --bug %q: want generate-name, memory, drop-conflict or none\n", *bug)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("bug", *bug)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *bug, log); err != nil {
		log.Error("stopped", "err", err)
		os.Exit(1)
	}
}

// operator is one running fragile operator.
type operator struct {
	bug, ns, image string
	log            *slog.Logger
	kube           kubernetes.Interface
	echoes         dynamic.ResourceInterface
	echoCache      cache.Indexer
	deployCache    cache.Indexer
	queue          workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	applied map[types.UID]int64 // memory: the generation applied, per Echo
	edited  map[string]bool     // memory: Echoes whose Deployment someone edited
}

func run(ctx context.Context, bug string, log *slog.Logger) error {
	ns, image := os.Getenv("WATCH_NAMESPACE"), os.Getenv("ECHO_IMAGE")
	if ns == "" || image == "" {
		return errors.New("WATCH_NAMESPACE and ECHO_IMAGE must be set")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	gvr := echov1.GroupVersion.WithResource(echov1.Plural)
	kubeInformers := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	echoInformers := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	echoInformer := echoInformers.ForResource(gvr).Informer()
	deployInformer := kubeInformers.Apps().V1().Deployments().Informer()
	o := &operator{
		bug: bug, ns: ns, image: image, log: log, kube: kube,
		echoes:      dyn.Resource(gvr).Namespace(ns),
		echoCache:   echoInformer.GetIndexer(),
		deployCache: deployInformer.GetIndexer(),
		queue:       workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		applied:     map[types.UID]int64{},
		edited:      map[string]bool{},
	}
	defer o.queue.ShutDown()
	add := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			o.queue.Add(u.GetName())
		}
	}
	if _, err := echoInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }, DeleteFunc: add,
	}); err != nil {
		return err
	}
	if _, err := deployInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: o.deploymentChanged,
		UpdateFunc: func(old, obj any) {
			// Someone else changed its spec (a hand scale): memory must not
			// skip the repair.
			if old.(*appsv1.Deployment).Generation != obj.(*appsv1.Deployment).Generation {
				o.markEdited(obj)
			}
			o.deploymentChanged(obj)
		},
		DeleteFunc: o.deploymentChanged,
	}); err != nil {
		return err
	}
	kubeInformers.Start(ctx.Done())
	echoInformers.Start(ctx.Done())
	defer kubeInformers.Shutdown()
	defer echoInformers.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), echoInformer.HasSynced, deployInformer.HasSynced) {
		return ctx.Err()
	}
	if bug == bugMemory {
		o.remember()
	}
	log.Info("started", "namespace", ns)
	go wait.UntilWithContext(ctx, o.work, time.Second)
	<-ctx.Done()
	return nil
}

// remember (memory) fills the memory at start so that a restart writes
// nothing: an Echo that has a Deployment is taken as applied. That is the
// mistake: the Deployment may be from before edits it never saw.
func (o *operator) remember() {
	for _, obj := range o.echoCache.List() {
		e, err := toEcho(obj)
		if err != nil {
			continue
		}
		if _, ok, _ := o.deployCache.GetByKey(o.ns + "/echo-" + e.Name); ok {
			o.applied[e.UID] = e.Generation
		}
	}
	o.log.Info("remembered what it found", "echoes", len(o.applied))
}

// deploymentChanged reconciles the Echo that controls the Deployment.
func (o *operator) deploymentChanged(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(d); ref != nil && ref.Kind == echov1.Kind {
		o.queue.Add(ref.Name)
	}
}

func (o *operator) markEdited(obj any) {
	if ref := metav1.GetControllerOf(obj.(*appsv1.Deployment)); ref != nil && ref.Kind == echov1.Kind {
		o.mu.Lock()
		o.edited[ref.Name] = true
		o.mu.Unlock()
	}
}

func (o *operator) work(ctx context.Context) {
	for {
		name, quit := o.queue.Get()
		if quit {
			return
		}
		err := o.reconcile(ctx, name)
		if err != nil {
			o.log.Error("reconcile", "echo", name, "err", err)
			o.queue.AddRateLimited(name)
		} else {
			o.queue.Forget(name)
		}
		o.queue.Done(name)
	}
}

// reconcile makes Deployment echo-<name> match Echo <name>, from the cache,
// and patches status.ready.
func (o *operator) reconcile(ctx context.Context, name string) error {
	obj, ok, err := o.echoCache.GetByKey(o.ns + "/" + name)
	if err != nil || !ok {
		return err // gone: the garbage collector removes its Deployment
	}
	e, err := toEcho(obj)
	if err != nil {
		return err
	}
	want := o.desired(e)
	var d *appsv1.Deployment
	if obj, ok, _ := o.deployCache.GetByKey(o.ns + "/" + want.Name); ok {
		d = obj.(*appsv1.Deployment)
	}
	switch {
	case d == nil:
		d, err = o.kube.AppsV1().Deployments(o.ns).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && o.bug == bugGenerateName {
			// The mistake: its cache showed none, so the one by that name
			// must be in the way; it makes another instead of reading it.
			want.Name, want.GenerateName = "", want.Name+"-"
			d, err = o.kube.AppsV1().Deployments(o.ns).Create(ctx, want, metav1.CreateOptions{})
			if err == nil {
				o.log.Info("the name was taken: created another", "deployment", d.Name)
			}
		}
		if err != nil {
			return fmt.Errorf("create Deployment %s: %w", want.Name, err)
		}
	case o.skip(e):
		// memory: applied already, as it remembers.
	case !matches(d, want):
		upd := d.DeepCopy()
		upd.Spec.Replicas = want.Spec.Replicas
		upd.Spec.Template.Spec.Containers = want.Spec.Template.Spec.Containers
		d, err = o.kube.AppsV1().Deployments(o.ns).Update(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			return o.dropped(fmt.Errorf("update Deployment %s: %w", upd.Name, err))
		}
	}
	o.mu.Lock()
	o.applied[e.UID] = e.Generation
	delete(o.edited, name)
	o.mu.Unlock()

	ready := fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, *want.Spec.Replicas)
	if e.Status.Ready == ready {
		return nil
	}
	patch := fmt.Appendf(nil, `{"status":{"ready":%q}}`, ready)
	if _, err := o.echoes.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return o.dropped(fmt.Errorf("patch status of Echo %s: %w", name, err))
	}
	return nil
}

// skip (memory) says the Echo's generation is applied, as remembered, and
// no one has edited its Deployment since.
func (o *operator) skip(e *echov1.Echo) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bug == bugMemory && o.applied[e.UID] == e.Generation && !o.edited[e.Name]
}

// dropped (drop-conflict) drops a conflict: the mistake is to trust that
// whatever changed the object sends an event that brings it back here.
func (o *operator) dropped(err error) error {
	if o.bug == bugDropConflict && apierrors.IsConflict(err) {
		o.log.Info("conflict: waiting for the next event", "err", err)
		return nil
	}
	return err
}

// desired is the Deployment Echo e asks for.
func (o *operator) desired(e *echov1.Echo) *appsv1.Deployment {
	replicas := int32(1) // unset: the CRD's default
	if e.Spec.Replicas != nil {
		replicas = *e.Spec.Replicas
	}
	labels := map[string]string{"app.kubernetes.io/name": "echo", "app.kubernetes.io/instance": e.Name, "app.kubernetes.io/managed-by": "fragile"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-" + e.Name, Namespace: o.ns, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(e, echov1.GroupVersionKind)}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": e.Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "echo", Image: o.image, ImagePullPolicy: corev1.PullIfNotPresent,
					Args:  []string{"-text=" + e.Spec.Message},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 5678, Protocol: corev1.ProtocolTCP}},
				}}},
			},
		},
	}
}

// matches compares the fields it sets.
func matches(d, want *appsv1.Deployment) bool {
	cs, ws := d.Spec.Template.Spec.Containers, want.Spec.Template.Spec.Containers
	return d.Spec.Replicas != nil && *d.Spec.Replicas == *want.Spec.Replicas && len(cs) == 1 &&
		cs[0].Image == ws[0].Image && slices.Equal(cs[0].Args, ws[0].Args)
}

func toEcho(obj any) (*echov1.Echo, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("not an Echo: %T", obj)
	}
	var e echov1.Echo
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &e); err != nil {
		return nil, fmt.Errorf("Echo %s: %w", u.GetName(), err)
	}
	return &e, nil
}
