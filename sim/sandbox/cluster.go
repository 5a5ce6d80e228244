package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/cluster"
)

// Cluster is the part of the engine that owns the cluster: the backend and
// its processes, the namespaces and RBAC the sandbox made there (removed at
// Stop), and the record of start-up. Callers ask it their question (which
// backend, its timeline, the classroom user) instead of asserting on the
// backend's type.
type Cluster struct {
	backend cluster.Cluster
	admin   *clients // rlab's own, for tenancy and the operators' RBAC
	sc      scope
	log     *slog.Logger
	note    func(string)

	kubeconfig, assets string
	image              string
	// tmp is the children's TMPDIR, under the run dir.
	tmp string

	// shared says the cluster outlives the sandbox, and owned lists the
	// namespaces it created there.
	shared bool
	owned  []string
	// granted are the RBAC objects made for operators' own RBAC
	// (Custom.RBAC) that Stop deletes.
	granted []grantedObject

	began    time.Time
	progress func(cluster.Phase)
	// Start's second phase adds to them behind an Early Start.
	mu     sync.Mutex
	phases []cluster.Phase
	marks  []cluster.Mark // the sandbox's own start-up moments, since began
}

// Type is which backend the cluster runs on, and so what it can do.
func (c *Cluster) Type() backend.Backend { return c.backend.Type() }

// Version is the cluster's Kubernetes version.
func (c *Cluster) Version() string { return c.backend.Version() }

// Detail says more for the screen's header after the version ("" if
// nothing), e.g. kind's node image.
func (c *Cluster) Detail() string { return c.backend.Detail() }

// Config is an admin client config of the cluster.
func (c *Cluster) Config() *rest.Config { return c.backend.Config() }

// Timeline is the backend's start-up timeline, if it started processes of
// its own to time (false on an existing cluster).
func (c *Cluster) Timeline() (cluster.Timeline, bool) {
	if t, ok := c.backend.(cluster.Timed); ok {
		return t.Timeline(), true
	}
	return cluster.Timeline{}, false
}

// ExistingUser is the user an existing cluster (backend.Kubeconfig) is
// used as, from its kubeconfig; false on a cluster the sandbox started.
func (c *Cluster) ExistingUser() (string, bool) {
	if e, ok := c.backend.(*cluster.Existing); ok {
		return e.User(), true
	}
	return "", false
}

// Shared says the cluster outlives the sandbox (backend.Kubeconfig): it
// touches nothing there outside its namespaces.
func (c *Cluster) Shared() bool { return c.shared }

// Began is when Start was called: ClusterReady and Ready count from it.
func (c *Cluster) Began() time.Time { return c.began }

// Marks are the sandbox's own start-up moments (the backend's are its
// Timeline), each since Began.
func (c *Cluster) Marks() []cluster.Mark {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]cluster.Mark(nil), c.marks...)
}

// Phases are the backend's start-up phases followed by the sandbox's own.
func (c *Cluster) Phases() []cluster.Phase {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(c.backend.Phases(), c.phases...)
}

// Image is what Echo pods run: Options.Image, or the backend's default.
func (c *Cluster) Image() string { return c.image }

// Kubeconfig is the path of the kubeconfig `rlab env` hands out: the
// student's proxy (trace.SourceYou), acting with the backend's identity.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// Kubectl is the kubectl rlab runs (the shell loop's), the one a student
// is told to use.
func (c *Cluster) Kubectl() string { return filepath.Join(c.assets, "kubectl") }

// KubectlCacheDir is where the operators' kubectl keeps its cache.
func (c *Cluster) KubectlCacheDir() string { return kubectlCacheDir(c.tmp) }

// kubectlCacheDir is the kubectl cache under the children's TMPDIR tmp.
func kubectlCacheDir(tmp string) string { return filepath.Join(tmp, "kubectl-cache") }

// mark records a moment of the sandbox's own start-up, for the timeline.
func (c *Cluster) mark(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.marks = append(c.marks, cluster.Mark{At: time.Since(c.began), Who: "rlab", What: what})
}

func (c *Cluster) phase(name string, took time.Duration) {
	p := cluster.Phase{Name: name, Took: took}
	c.mu.Lock()
	c.phases = append(c.phases, p)
	c.mu.Unlock()
	if c.progress != nil {
		c.progress(p)
	}
}

// WebhookHoster is a backend whose apiserver reaches this machine at an
// address other than 127.0.0.1: kind's nodes, through their network's
// gateway.
type WebhookHoster interface {
	WebhookHost(ctx context.Context) (string, error)
}

// webhookHost is the address the apiserver reaches rlab's processes at,
// or why it cannot.
func (c *Cluster) webhookHost(ctx context.Context) (string, error) {
	if h, ok := c.backend.(WebhookHoster); ok {
		return h.WebhookHost(ctx)
	}
	if c.backend.Type() == backend.Envtest {
		return "127.0.0.1", nil // the apiserver is a process of this machine
	}
	return "", fmt.Errorf("the %s backend's apiserver cannot reach a server on this machine", c.backend.Type().Name)
}

// stop removes what the sandbox made on the cluster, once the operators
// are gone, and stops the backend. It is safe to call more than once.
func (c *Cluster) stop() error {
	var errs []error
	if len(c.granted) > 0 && c.admin != nil {
		// An operator's own RBAC that its namespace would not take with
		// it (ClusterRoles, a prepared namespace's Roles) goes now, as
		// its namespace does, whether the cluster stays or not.
		errs = append(errs, c.revokeRBAC())
	}
	if c.shared && c.admin != nil {
		// Only now: the operators are gone and cannot recreate anything.
		errs = append(errs, c.removeOwn())
		c.shared = false
	}
	if c.backend != nil {
		errs = append(errs, c.backend.Stop())
		c.backend = nil
	}
	return errors.Join(errs...)
}

// workloadImage is the image Echo pods run: the one asked for, else the
// backend's default. This is the one place that default is decided, once the
// backend has started: kind knows only then which node image it runs, and an
// offline node has nothing but the echo server it was built with.
func workloadImage(b cluster.Cluster, asked string) string {
	if asked != "" {
		return asked
	}
	if w, ok := b.(cluster.WorkloadImager); ok {
		return w.WorkloadImage(echo.DefaultImage)
	}
	return echo.DefaultImage // envtest: kwok plays the node, nothing is pulled
}

// newBackend makes the (unstarted) cluster backend opts ask for.
func newBackend(opts Options, prefix style.Prefix, tmp string) (cluster.Cluster, error) {
	b := cmp.Or(opts.Backend, backend.Default)
	if b == backend.Kubeconfig {
		return cluster.NewExisting(cluster.ExistingOptions{
			Path: opts.Kubeconfig, Context: opts.Context, Prefix: prefix,
			Log: opts.Log, Progress: opts.Progress,
		}), nil
	}
	if b == backend.Kind {
		return cluster.NewKind(cluster.KindOptions{
			StateRoot: opts.State.Root,
			Image:     opts.KindImage,
			RunDir:    opts.State.Run(),
			LogDir:    opts.State.Logs(),
			Log:       opts.Log,
			Progress:  opts.Progress,
			Note:      opts.Note,
		}), nil
	}
	return cluster.NewEnvtest(cluster.EnvtestOptions{
		Assets:   opts.Assets,
		RunDir:   opts.State.Run(),
		LogDir:   opts.State.Logs(),
		PIDDir:   opts.State.PIDs(),
		TempDir:  tmp,
		Log:      opts.Log,
		Progress: opts.Progress,
	}), nil
}

// Shipper is a cluster a student's operator can be shipped into as an
// image (sim/ship): rlab's own kind cluster, whose node it loads the image
// into and whose apiserver's audit log it reads.
type Shipper interface {
	LoadImage(archive func() (io.ReadCloser, error)) error
	AuditLog(ctx context.Context) (io.ReadCloser, error)
	APIServerHost() (string, error)
}

// Shipper is the cluster as a Shipper, if it is one.
func (c *Cluster) Shipper() (Shipper, bool) {
	s, ok := c.backend.(Shipper)
	return s, ok
}
