// Package cluster provides the Kubernetes control plane a sandbox runs on.
//
// Cluster is what the rest of rlab needs from a cluster; Envtest, the default,
// starts a real one on this machine with no Docker: the kube-apiserver and etcd
// that controller-runtime's envtest runs, plus kube-controller-manager (garbage
// collection, Deployments, ReplicaSets, node lifecycle, namespace deletion),
// kube-scheduler and kwok, which plays the kubelet of a few fake Nodes so Pods
// become Ready. Other backends
// (kind, an existing kubeconfig) implement the same interface. Operators'
// identities are ServiceAccounts on every backend (see ServiceAccount).
package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/backend"
)

// Cluster is a running (or startable) control plane, of one backend.
type Cluster interface {
	// Type is which backend this is, and so what it can do.
	Type() backend.Backend
	// Detail says more for the screen's header after the version, e.g.
	// kind's node image; "" if there is nothing to add.
	Detail() string
	// Start brings the cluster up and returns once it is Ready: the Echo CRD
	// established, a Node Ready and untainted, its controllers running.
	Start(ctx context.Context) error
	// Stop tears everything down that Start started, and removes its files.
	Stop() error
	// Config is an admin (system:masters) client config.
	Config() *rest.Config
	// Kubeconfig is the same admin identity as a kubeconfig file's bytes.
	Kubeconfig() []byte
	// Version is the apiserver's git version, e.g. "v1.36.3".
	Version() string
	// Phases are the start-up phases done so far, with their durations.
	Phases() []Phase
}

// Abilities some backends have that need a method call; whether a backend
// has one is told by its Type's traits where that is static.
type (
	// Tenant is a backend on a cluster shared with others (Type().Shared):
	// Prefix is the namespace prefix it works under, known once started.
	Tenant interface{ Prefix() style.Prefix }
	// WorkloadImager is a backend with a default Echo image of its own, as
	// kind's offline node image has.
	WorkloadImager interface{ WorkloadImage(fallback string) string }
	// Phased is a backend that starts in three phases, so that rlab can
	// set up its namespaces, the world and the sample while the rest comes
	// up. Serve returns once the apiserver serves, the Echo CRD is
	// established, the Nodes are Ready and a ServiceAccount may discover
	// the API; Ready once the apiserver is healthy (its post-start hooks
	// done) and every component runs, as kwokctl's --wait means it; Settle
	// once the Nodes are untainted and every component is healthy, as
	// Start's return means it. Start is the three in turn.
	Phased interface {
		Serve(ctx context.Context) error
		Ready(ctx context.Context) error
		Settle(ctx context.Context) error
	}
)

var (
	_ Tenant         = (*Existing)(nil)
	_ WorkloadImager = (*Kind)(nil)
)

// Phase is one step of start-up and how long it took.
type Phase struct {
	Name string
	Took time.Duration
}

// phases records a backend's start-up phases as they end, and tells.
type phases struct {
	log      *slog.Logger
	progress func(Phase) // may be nil

	mu    sync.Mutex
	done  []Phase
	t0    time.Time    // Start began (zero: no timeline kept)
	marks []Mark       // the timeline, for backends that keep one
	cpu   []ProcessCPU // each process's CPU when start-up ended
}

// step runs fn as one named, timed phase.
func (p *phases) step(name string, fn func() error) error {
	start := time.Now()
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	ph := Phase{Name: name, Took: time.Since(start)}
	p.mu.Lock()
	p.done = append(p.done, ph)
	p.mu.Unlock()
	p.log.Info("phase done", "phase", ph.Name, "took", ph.Took)
	if p.progress != nil {
		p.progress(ph)
	}
	return nil
}

// Phases implements Cluster.
func (p *phases) Phases() []Phase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Phase(nil), p.done...)
}
