package echo

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"time"
)

// Options are the flags both Go operators take, so that `rlab operator
// clientgo` and `rlab operator runtime` are started the same way.
type Options struct {
	Kubeconfig string // empty: in-cluster or $KUBECONFIG
	Namespace  string // the only namespace the operator watches and writes
	Replica    string // "a", "b": part of the leader identity
	Workers    int    // concurrent reconciles
	Image      string // what Echo pods run; DefaultImage unless the cluster has another

	// QPS and Burst are the client-side rate limit of the replica's API
	// clients (rest.Config): QPS 0 leaves the library's default (client-go
	// 5 req/s, burst 10; controller-runtime none), QPS NoClientLimit (-1)
	// none at all. A Burst goes with a QPS above 0: client-go's clientset
	// refuses a rate without one.
	QPS   float32
	Burst int

	// WatchOwned makes Deployment events trigger the owning Echo's reconcile.
	// Off, a hand edit of a Deployment is never repaired: the classic bug.
	WatchOwned bool
	// Finalizer puts echo.Finalizer on every Echo and lists it in the
	// registry ConfigMap; a deleted Echo goes only once it is unlisted.
	// Off, an Echo that still carries the finalizer is cleaned up all the same.
	Finalizer bool
	// Warmup starts the controller's sources (its informers' watches)
	// before the replica leads, so that a standby takes over with a warm
	// cache: controller-runtime's EnableWarmup. client-go has no such
	// option (its operator would have to start its informers before the
	// election by hand), so only the controller-runtime operator takes it.
	Warmup bool
	// GenerationPredicate is where controller-runtime's
	// GenerationChangedPredicate filters updates that leave
	// metadata.generation as it was (status, labels, finalizers, owners):
	// GenerationOff (nowhere), GenerationOnEcho (the Echo watch: its own
	// status writes no longer requeue it) or GenerationEverywhere (every
	// watch, as WithEventFilter would: its Deployments' status changes are
	// lost too). Only the controller-runtime operator takes it.
	GenerationPredicate string
	// DefaultsCache is what controller-runtime's cache holds of ConfigMaps,
	// for the watch of echo-defaults: DefaultsCacheAll (every ConfigMap of
	// the namespace, a predicate filtering the events of the others) or
	// DefaultsCacheNamed (echo-defaults alone, by a field selector). Only
	// the controller-runtime operator takes it; the client-go operator's
	// informer always asks for echo-defaults alone.
	DefaultsCache string

	// WebhookPort, if above 0, serves the validating webhook of Echoes
	// (unique messages) over TLS on WebhookHost:WebhookPort, with tls.crt
	// and tls.key from WebhookCertDir. Only the controller-runtime
	// operator takes it.
	WebhookHost    string
	WebhookPort    int
	WebhookCertDir string

	LeaderElect   bool
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration

	Trace io.Writer // JSON-lines trace (stdout when RLAB_TRACE=1), nil for none
	Log   *slog.Logger
}

// NoClientLimit is the Options.QPS of no client-side rate limit: client-go
// builds no limiter for a negative QPS.
const NoClientLimit = -1

// CheckClientLimit says what is wrong with a --qps and --burst, or nil,
// in the words of those flags: the operators, the sandbox, `rlab do tune`
// and `rlab bench` take them. A QPS is above 0, or NoClientLimit (0 leaves
// the library's default); a burst goes with a QPS above 0, and such a QPS
// needs one: kubernetes.NewForConfig refuses a rate without a burst, and a
// burst with no rate limits nothing.
func CheckClientLimit(qps float32, burst int) error {
	q := float64(qps)
	shown := strconv.FormatFloat(q, 'g', -1, 32)
	switch {
	case q != 0 && q != NoClientLimit && (q <= 0 || math.IsNaN(q) || math.IsInf(q, 0)):
		return fmt.Errorf("--qps %s: want requests per second above 0, e.g. 50, or -1 for no client-side limit (0: the library's default)", shown)
	case burst < 0:
		return fmt.Errorf("--burst %d: want at least 1, e.g. 100", burst)
	case q > 0 && burst == 0:
		return fmt.Errorf("--qps %s: want a --burst of at least 1 with it, e.g. --burst %d: client-go's clientset refuses a rate without one", shown, int(max(1, min(2*q, 1e6))))
	case q <= 0 && burst > 0:
		return fmt.Errorf("--burst %d: want a --qps above 0 with it, e.g. --qps 50: a burst is of a rate", burst)
	}
	return nil
}

// The values of Options.GenerationPredicate.
const (
	GenerationOff        = "off"
	GenerationOnEcho     = "echo"
	GenerationEverywhere = "all"
)

// GenerationPredicates are those values, in the order a flag lists them.
var GenerationPredicates = []string{GenerationOff, GenerationOnEcho, GenerationEverywhere}

// DefaultOptions are short teaching values: failover is seen within seconds.
func DefaultOptions() Options {
	return Options{
		Workers:             1,
		Image:               DefaultImage,
		WatchOwned:          true,
		GenerationPredicate: GenerationOff,
		DefaultsCache:       DefaultsCacheAll,
		LeaderElect:         true,
		LeaseDuration:       4 * time.Second,
		RenewDeadline:       3 * time.Second,
		RetryPeriod:         time.Second,
	}
}
