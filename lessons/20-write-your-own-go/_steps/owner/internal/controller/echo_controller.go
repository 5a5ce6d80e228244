// Package controller holds the Echo reconciler, as `kubebuilder create api`
// scaffolds it and a student fills it in.
package controller

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	kkloudv1 "example.com/echo/api/v1"
)

// defaultImage is what Echo pods run when $ECHO_IMAGE is not set.
const defaultImage = "hashicorp/http-echo:0.2.3"

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
// +kubebuilder:rbac:groups=kkloud.io,resources=echoes,verbs=get;list;watch
// +kubebuilder:rbac:groups=kkloud.io,resources=echoes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch

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
	// TODO(lesson 20, step 8): the registry, ConfigMap echo-registry, lists
	// no Echo, and a deleted Echo would leave its entry there.

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
		// deletes the Deployment with it.
		return controllerutil.SetControllerReference(&echo, dep, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("create or update Deployment %s: %w", dep.Name, err)
	}
	if op != controllerutil.OperationResultNone {
		log.Info("Deployment "+string(op), "deployment", dep.Name)
	}

	// TODO(lesson 20, step 6): kubectl get ec shows no READY.
	return ctrl.Result{}, nil
}

// imageForEcho is the image of Echo pods: $ECHO_IMAGE (rlab sets it to the
// image its cluster's nodes can run), or the default.
func imageForEcho() string {
	if img := os.Getenv("ECHO_IMAGE"); img != "" {
		return img
	}
	return defaultImage
}

// SetupWithManager watches Echoes.
func (r *EchoReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&kkloudv1.Echo{}).
		// TODO(lesson 20, step 11): each status this controller writes queues
		// its Echo again.
		// TODO(lesson 20, step 5): delete the Deployment and it stays deleted.
		Named("echo").
		Complete(r)
}
