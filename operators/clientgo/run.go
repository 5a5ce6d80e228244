package clientgo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/echo/instrument"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
)

// Style is this operator's name in traces, identities and the screen.
const Style = style.ClientGo

// ErrLeaderLost ends Run when another replica took the Lease: the process
// exits and is restarted as a standby, as in a real cluster.
var ErrLeaderLost = errors.New("leader election lost")

// Run runs one replica of the operator until ctx ends or, with leader
// election, until it loses the Lease.
func Run(ctx context.Context, o echo.Options) error {
	log := o.Log.With("style", string(Style), "replica", o.Replica)
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = Style.UserAgent(o.Replica)
	// Client limits: set before any client is built, each takes its limiter
	// from cfg. Unset (0): client-go's defaults, 5 req/s and burst 10 for
	// each API group's client and for the dynamic client apart; a QPS set
	// above 0 is one limiter shared by the clientset's groups
	// (kubernetes.NewForConfig) and one of the dynamic client.
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	em := instrument.NewEmitter(o.Trace, Style.Source(o.Replica))
	defer em.Close()
	// The limits in effect, as client-go reads cfg.
	em.EmitClientLimits(o.Namespace, cfg)
	// Events about Echoes go to their namespace, as kubectl describe shows.
	scheme := runtime.NewScheme()
	if err := echov1.AddToScheme(scheme); err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events(o.Namespace)})
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: Style.ManagedBy()})

	run := func(ctx context.Context) error {
		// No resync (0): every reconcile here has an event behind it.
		kubeInformers := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(o.Namespace))
		echoInformers := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, o.Namespace, nil)
		// A factory of its own for echo-defaults: its informers list and
		// watch with fieldSelector=metadata.name=echo-defaults, so no other
		// ConfigMap of the namespace is listed, watched or cached.
		defaultsInformers := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(o.Namespace),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
				lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", echo.DefaultsName).String()
			}))
		c, err := NewController(kube, dyn, o.Namespace, o.Image, kubeInformers, defaultsInformers, echoInformers, recorder,
			o.WatchOwned, o.Finalizer, instrument.NewTracer(em, o.Namespace, log), log)
		if err != nil {
			return err
		}
		kubeInformers.Start(ctx.Done())
		defaultsInformers.Start(ctx.Done())
		echoInformers.Start(ctx.Done())
		defer kubeInformers.Shutdown()
		defer defaultsInformers.Shutdown()
		defer echoInformers.Shutdown()
		return c.Run(ctx, o.Workers)
	}
	if !o.LeaderElect {
		return run(ctx)
	}

	// Only the replica holding the Lease runs informers and workers; the
	// others wait, retrying every RetryPeriod.
	id := Style.Identity(o.Replica, os.Getpid())
	lease := "Lease/" + echo.LeaseName
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: echo.LeaseName, Namespace: o.Namespace},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	runErr := make(chan error, 1)
	var leading atomic.Bool
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            echo.LeaseName,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true, // a graceful stop hands over at once
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				leading.Store(true)
				em.Emit(trace.LeaderAcquired, o.Namespace, lease, trace.Leader{Identity: id})
				log.Info("became leader", "identity", id)
				runErr <- run(ctx)
			},
			// Called on every exit, even by a replica that never led.
			OnStoppedLeading: func() {
				if !leading.Load() {
					return
				}
				reason := trace.ReasonReleased // ReleaseOnCancel gives it up on a graceful stop
				if ctx.Err() == nil {
					reason = trace.ReasonLost
				}
				em.Emit(trace.LeaderLost, o.Namespace, lease, trace.Leader{Identity: id, Reason: reason})
				log.Info("stopped leading", "identity", id, "reason", reason)
			},
			OnNewLeader: func(holder string) {
				em.Emit(trace.LeaderObserved, o.Namespace, lease, trace.Leader{Identity: holder})
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	log.Info("waiting for the Lease", "identity", id, "lease", echo.LeaseName)
	le.Run(ctx) // returns when ctx ends or the Lease is lost
	if leading.Load() {
		// The leader's context is cancelled by now: wait until its workers
		// have stopped, so nothing acts (or traces) after we return.
		if err := <-runErr; err != nil {
			return err
		}
	}
	if ctx.Err() == nil {
		return ErrLeaderLost
	}
	return nil
}
