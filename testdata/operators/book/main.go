// Command book is an Echo operator written the way the kubebuilder book's
// tutorials teach, kept as a fixture of `rlab check --chaos`:
//
//   - Reconcile returns every error, so controller-runtime requeues the
//     Echo with its per-item exponential backoff (5 ms, doubling, up to
//     1000 s);
//   - controllerutil.CreateOrUpdate's mutate function sets the whole
//     Deployment spec, as the book's deploymentForMemcached builds one, so
//     the spec it sends lacks the apiserver's defaults (strategy,
//     revisionHistoryLimit, terminationMessagePath, …): CreateOrUpdate sees a
//     difference on every pass and updates the Deployment, and the apiserver
//     defaults it back to what it was, changing nothing;
//   - the status is written with Status().Update on every pass.
//
// So each reconcile makes two writes, the Deployment's and the status's.
// --drop-errors is its twin with the real bug: the two error branches log
// and return ctrl.Result{}, nil, so a refused write is lost until some
// unrelated event brings the Echo back.
//
// It finds its cluster the way rlab hands it over: $KUBECONFIG,
// $WATCH_NAMESPACE (its cache is namespaced) and $ECHO_IMAGE. It elects no
// leader and serves no probes or metrics.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kkloudv1 "github.com/kkloud/rlab/testdata/operators/kubebuilder/api/v1"
)

// EchoReconciler reconciles an Echo the book's way.
type EchoReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// DropErrors is the bug: a failed write is logged and forgotten.
	DropErrors bool
}

// Reconcile makes Deployment echo-<name> what Echo <name> asks for and
// writes status.ready.
func (r *EchoReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var echo kkloudv1.Echo
	if err := r.Get(ctx, req.NamespacedName, &echo); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "echo-" + echo.Name, Namespace: echo.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		dep.Spec = deploymentSpec(&echo) // the whole spec, as the book builds it
		return controllerutil.SetControllerReference(&echo, dep, r.Scheme)
	}); err != nil {
		return r.failed(ctx, fmt.Errorf("create or update Deployment %s: %w", dep.Name, err))
	}

	echo.Status.Ready = fmt.Sprintf("%d/%d", dep.Status.ReadyReplicas, replicas(&echo))
	if err := r.Status().Update(ctx, &echo); err != nil {
		return r.failed(ctx, fmt.Errorf("update status of Echo %s: %w", echo.Name, err))
	}
	log.V(1).Info("reconciled", "ready", echo.Status.Ready)
	return ctrl.Result{}, nil
}

// failed returns err, so that controller-runtime retries with backoff; with
// DropErrors, it logs err and returns nil: the bug.
func (r *EchoReconciler) failed(ctx context.Context, err error) (ctrl.Result, error) {
	if r.DropErrors {
		logf.FromContext(ctx).Error(err, "reconcile failed; not retrying")
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// replicas is spec.replicas, or the CRD's default, 1.
func replicas(e *kkloudv1.Echo) int32 {
	if e.Spec.Replicas < 1 {
		return 1
	}
	return e.Spec.Replicas
}

// deploymentSpec is the Deployment spec Echo e asks for, built whole.
func deploymentSpec(e *kkloudv1.Echo) appsv1.DeploymentSpec {
	n := replicas(e)
	labels := map[string]string{"app.kubernetes.io/name": "echo", "app.kubernetes.io/instance": e.Name}
	image := os.Getenv("ECHO_IMAGE")
	if image == "" {
		image = "hashicorp/http-echo:0.2.3"
	}
	return appsv1.DeploymentSpec{
		Replicas: &n,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name:  "echo",
				Image: image,
				Args:  []string{"-text=" + e.Spec.Message},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 5678}},
			}}},
		},
	}
}

func main() {
	drop := flag.Bool("drop-errors", false, "the bug: log a failed write and return nil instead of the error")
	flag.Parse()
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil)))
	log := ctrl.Log.WithName("book")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kkloudv1.AddToScheme(scheme))
	var cacheOpts cache.Options
	if ns := os.Getenv("WATCH_NAMESPACE"); ns != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		log.Error(err, "new manager")
		os.Exit(1)
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&kkloudv1.Echo{}).
		Owns(&appsv1.Deployment{}).
		Named("echo").
		Complete(&EchoReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), DropErrors: *drop}); err != nil {
		log.Error(err, "new controller")
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
