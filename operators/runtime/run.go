package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"k8s.io/utils/ptr"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/echo/instrument"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
)

// Style is this operator's name in traces, identities and the screen.
const Style = style.Runtime

// ErrLeaderLost ends Run when another replica took the Lease: the manager
// cannot be restarted, so the process exits and comes back as a standby.
var ErrLeaderLost = errors.New("leader election lost")

// Run runs one replica of the operator until ctx ends or, with leader
// election, until it loses the Lease.
func Run(ctx context.Context, o echo.Options) error {
	log := o.Log.With("style", string(Style), "replica", o.Replica)
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = Style.UserAgent(o.Replica)
	// Client limits: set before any client is built, each takes its limiter
	// from cfg. Unset (0): what ctrl.GetConfig() gives a controller-runtime
	// main.go (pkg/client/config), no client-side limit (QPS -1), the
	// apiserver's priority and fairness does flow control; a QPS set above
	// 0 is one limiter per client the manager builds (one per kind).
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	if cfg.QPS == 0 {
		cfg.QPS = echo.NoClientLimit
	}
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := echov1.AddToScheme(scheme); err != nil {
		return err
	}
	em := instrument.NewEmitter(o.Trace, Style.Source(o.Replica))
	defer em.Close()
	// The limits in effect, as client-go reads cfg.
	em.EmitClientLimits(o.Namespace, cfg)

	id := Style.Identity(o.Replica, os.Getpid())
	opts := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"}, // no :8080 listener
		HealthProbeBindAddress: "0",
		// The cache (informers) covers only our namespace, Owns() types too.
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{o.Namespace: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	// A plain clientset for the Lease and the registry, which the
	// manager's cache need not watch.
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if o.LeaderElect {
		opts.LeaderElection = true
		opts.LeaderElectionID = echo.LeaseName
		opts.LeaderElectionNamespace = o.Namespace
		opts.LeaderElectionReleaseOnCancel = true // a graceful stop hands over at once
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &o.LeaseDuration, &o.RenewDeadline, &o.RetryPeriod
		// Our own lock only to set the identity <style>-<replica>-<pid>.
		opts.LeaderElectionResourceLockInterface = &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: echo.LeaseName, Namespace: o.Namespace},
			Client:     kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		}
	}
	if o.DefaultsCache == echo.DefaultsCacheNamed {
		// The watch of echo-defaults (SetupWithManager) filters the events
		// of other ConfigMaps with a predicate, but its informer still
		// lists and watches them all. Narrowed here, the cache asks for
		// fieldSelector=metadata.name=echo-defaults and holds that one.
		opts.Cache.ByObject = map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Field: fields.OneTermEqualSelector("metadata.name", echo.DefaultsName)},
		}
	}
	if o.WebhookPort > 0 {
		// The server runs whether or not this replica leads: the manager
		// starts webhooks before the election, and the cache they read too.
		opts.WebhookServer = webhook.NewServer(webhook.Options{Host: o.WebhookHost, Port: o.WebhookPort, CertDir: o.WebhookCertDir})
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if o.WebhookPort > 0 {
		// Served at /validate-kkloud-io-v1-echo (echov1.WebhookPath).
		v := &UniqueMessage{Reader: mgr.GetClient(), Namespace: o.Namespace}
		if err := ctrl.NewWebhookManagedBy(mgr, &echov1.Echo{}).WithValidator(v).Complete(); err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
		log.Info("serving the validating webhook", "host", o.WebhookHost, "port", o.WebhookPort, "path", echov1.WebhookPath)
	}
	r := &EchoReconciler{
		Client:              mgr.GetClient(),
		Scheme:              mgr.GetScheme(),
		APIReader:           mgr.GetAPIReader(),
		Kube:                kube,
		Recorder:            mgr.GetEventRecorder(Style.ManagedBy()),
		Namespace:           o.Namespace,
		Image:               o.Image,
		Workers:             o.Workers,
		WatchOwned:          o.WatchOwned,
		Finalizer:           o.Finalizer,
		Warmup:              o.Warmup,
		GenerationPredicate: o.GenerationPredicate,
		Trace:               instrument.NewTracer(em, o.Namespace, log),
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	lease := "Lease/" + echo.LeaseName
	var leading atomic.Bool
	go func() {
		select {
		case <-mgr.Elected():
			if o.LeaderElect {
				leading.Store(true)
				em.Emit(trace.LeaderAcquired, o.Namespace, lease, trace.Leader{Identity: id})
				log.Info("became leader", "identity", id)
			}
		case <-ctx.Done():
		}
	}()
	if o.LeaderElect {
		log.Info("waiting for the Lease", "identity", id, "lease", echo.LeaseName)
	}
	err = mgr.Start(ctx)
	if leading.Load() {
		reason := trace.ReasonReleased // ReleaseOnCancel gave it up on a graceful stop
		if ctx.Err() == nil {
			reason = trace.ReasonLost
		}
		em.Emit(trace.LeaderLost, o.Namespace, lease, trace.Leader{Identity: id, Reason: reason})
		log.Info("stopped leading", "identity", id, "reason", reason)
	}
	if err != nil && ctx.Err() == nil {
		if err.Error() == ErrLeaderLost.Error() {
			return ErrLeaderLost
		}
		return fmt.Errorf("manager: %w", err)
	}
	return nil
}
