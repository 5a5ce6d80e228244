// Package controller holds the Echo reconciler, as `kubebuilder create api`
// scaffolds it and a student fills it in.
package controller

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	kkloudv1 "example.com/echo/api/v1"
)

// defaultImage is what Echo pods run when $ECHO_IMAGE is not set.
const defaultImage = "hashicorp/http-echo:0.2.3"

// The registry is state outside the owner tree, as in lesson 9: ConfigMap
// echo-registry lists each Echo by name and uid. Nothing owns an entry, so
// the garbage collector never removes one; the finalizer makes the
// apiserver keep a deleted Echo until this controller has.
const (
	registryFinalizer = "kkloud.io/echo-registry"
	registryName      = "echo-registry"
)

// EchoReconciler reconciles an Echo object.
type EchoReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// APIReader reads from the apiserver itself, not the cache
	// (mgr.GetAPIReader()).
	APIReader client.Reader
}

// The resources Reconcile uses, not every verb of each as kubebuilder's
// scaffold asks; `make manifests` would turn them into config/rbac/role.yaml.
// +kubebuilder:rbac:groups=kkloud.io,resources=echoes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=kkloud.io,resources=echoes/finalizers,verbs=update
// +kubebuilder:rbac:groups=kkloud.io,resources=echoes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=configmaps,resourceNames=echo-registry,verbs=update;patch

// Reconcile makes Deployment echo-<name> match Echo <name> and writes what
// it sees into the Echo's status. It reads everything it needs each time,
// whatever event brought it here.
func (r *EchoReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	var echo kkloudv1.Echo
	if err := r.Get(ctx, req.NamespacedName, &echo); err != nil {
		// Deleted: the garbage collector removes its Deployment, which
		// names the Echo as its controller.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	// Being deleted: the apiserver keeps the Echo while our finalizer is
	// on it. Unlist it, then remove the finalizer; the garbage collector
	// takes the Deployment once the Echo is gone.
	if !echo.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&echo, registryFinalizer) {
			return ctrl.Result{}, nil // not ours to hold
		}
		if err := r.unregister(ctx, &echo); err != nil {
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(&echo, registryFinalizer)
		if err := r.Update(ctx, &echo); err != nil {
			return ctrl.Result{}, fmt.Errorf("remove finalizer of Echo %s: %w", echo.Name, err)
		}
		log.Info("Finalizer removed", "finalizer", registryFinalizer)
		return ctrl.Result{}, nil
	}
	// The finalizer first, then the entry: an Echo deleted in between is
	// held until the entry it may have is gone.
	if controllerutil.AddFinalizer(&echo, registryFinalizer) {
		if err := r.Update(ctx, &echo); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to Echo %s: %w", echo.Name, err)
		}
	}
	if err := r.register(ctx, &echo); err != nil {
		return ctrl.Result{}, err
	}

	replicas := echo.Spec.Replicas
	if replicas < 1 {
		replicas = 1 // the CRD's default
	}
	labels := map[string]string{
		"app.kubernetes.io/name":       "echo",
		"app.kubernetes.io/instance":   echo.Name,
		"app.kubernetes.io/managed-by": "echo-kubebuilder",
	}

	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "echo-" + echo.Name, Namespace: echo.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		// Set only the fields this controller owns, so that the apiserver's
		// defaults stay and an unchanged Echo causes no write.
		if dep.Labels == nil {
			dep.Labels = map[string]string{}
		}
		for k, v := range labels {
			dep.Labels[k] = v
		}
		if dep.CreationTimestamp.IsZero() { // the selector cannot change later
			dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": echo.Name}}
		}
		dep.Spec.Replicas = &replicas
		dep.Spec.Template.Labels = labels
		pod := &dep.Spec.Template.Spec
		if len(pod.Containers) != 1 {
			pod.Containers = []corev1.Container{{}}
		}
		c := &pod.Containers[0]
		c.Name = "echo"
		c.Image = imageForEcho()
		c.ImagePullPolicy = corev1.PullIfNotPresent
		c.Args = []string{"-text=" + echo.Spec.Message} // one argument: no shell splits it
		c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 5678, Protocol: corev1.ProtocolTCP}}
		// The Echo is the Deployment's controller: the garbage collector
		// deletes the Deployment with it, and Owns below maps the
		// Deployment's events back to it.
		return controllerutil.SetControllerReference(&echo, dep, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("create or update Deployment %s: %w", dep.Name, err)
	}
	if op != controllerutil.OperationResultNone {
		log.Info("Deployment "+string(op), "deployment", dep.Name)
	}

	// Status says what this pass saw, about the spec it read: its
	// generation. A status that would not change is not written. An update
	// whose resourceVersion is no longer the Echo's (someone wrote it since)
	// is refused with a conflict: read the Echo again and retry, rather than
	// wait for the next event. From the apiserver, not the cache, which may
	// still hold the version that conflicted.
	latest := echo.DeepCopy()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		want := status(&echo, dep, replicas, latest.Status.Conditions)
		if equality.Semantic.DeepEqual(latest.Status, want) {
			return nil
		}
		latest.Status = want
		err := r.Status().Update(ctx, latest)
		if apierrors.IsConflict(err) {
			if err := r.APIReader.Get(ctx, req.NamespacedName, latest); err != nil {
				return err
			}
		}
		return err
	})
	if err := client.IgnoreNotFound(err); err != nil { // deleted meanwhile: nothing to report
		return ctrl.Result{}, fmt.Errorf("update status of Echo %s: %w", echo.Name, err)
	}
	return ctrl.Result{}, nil
}

// status is what Echo e's status says once Deployment dep is reconciled
// with its spec: ready pods of replicas, the generation reconciled, and the
// Ready and Progressing conditions (prev keeps the lastTransitionTime of a
// condition whose status stays).
func status(e *kkloudv1.Echo, dep *appsv1.Deployment, replicas int32, prev []metav1.Condition) kkloudv1.EchoStatus {
	s := dep.Status
	st := kkloudv1.EchoStatus{
		Ready:              fmt.Sprintf("%d/%d", s.ReadyReplicas, replicas),
		ObservedGeneration: e.Generation,
		Conditions:         append([]metav1.Condition(nil), prev...),
	}
	set := func(typ string, ok bool, reason, message string) {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: e.Generation}
		if ok {
			c.Status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
	if s.ReadyReplicas >= replicas {
		set("Ready", true, "ReplicasReady", st.Ready+" replicas ready")
	} else {
		set("Ready", false, "ReplicasNotReady", st.Ready+" replicas ready")
	}
	rolling := s.ObservedGeneration < dep.Generation || s.UpdatedReplicas < replicas ||
		s.ReadyReplicas < replicas || s.Replicas > replicas
	if rolling {
		set("Progressing", true, "RollingOut", "Deployment "+dep.Name+" is rolling out")
	} else {
		set("Progressing", false, "UpToDate", "Deployment "+dep.Name+" is up to date")
	}
	return st
}

// register lists Echo e in the registry under its uid, creating the
// registry if there is none. An entry already right is not written.
func (r *EchoReconciler) register(ctx context.Context, e *kkloudv1.Echo) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: registryName, Namespace: e.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[e.Name] = string(e.UID)
		return nil
	})
	if err != nil {
		return fmt.Errorf("register Echo %s in %s: %w", e.Name, registryName, err)
	}
	return nil
}

// unregister removes Echo e's entry from the registry; an entry or a
// registry already gone is fine. This is the cleanup the finalizer waits for.
func (r *EchoReconciler) unregister(ctx context.Context, e *kkloudv1.Echo) error {
	var cm corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: registryName}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", registryName, err)
	}
	if _, ok := cm.Data[e.Name]; !ok {
		return nil
	}
	delete(cm.Data, e.Name)
	if err := r.Update(ctx, &cm); err != nil {
		return fmt.Errorf("unregister Echo %s from %s: %w", e.Name, registryName, err)
	}
	return nil
}

// imageForEcho is the image of Echo pods: $ECHO_IMAGE (rlab sets it to the
// image its cluster's nodes can run), or the default.
func imageForEcho() string {
	if img := os.Getenv("ECHO_IMAGE"); img != "" {
		return img
	}
	return defaultImage
}

// SetupWithManager watches Echoes, and the Deployments they own: a change to
// one (its pods ready, a hand scale, a delete) reconciles its Echo.
func (r *EchoReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&kkloudv1.Echo{}).
		Owns(&appsv1.Deployment{}).
		Named("echo").
		Complete(r)
}
