// Package sandbox is rlab's engine: it owns the state directory, cleans up
// after a run that was killed, starts the cluster backend and tears it all
// down again. It knows nothing of the screen.
package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/sim/tenancy"
	"github.com/kkloud/rlab/sim/world"
)

// Options configures a sandbox.
type Options struct {
	State  state.Dir
	Assets string // control-plane binaries
	Self   string // rlab itself, which runs the Go operators; os.Executable() if empty
	Log    *slog.Logger
	// Progress, if set, is called as each start-up phase ends.
	Progress func(cluster.Phase)

	// Styles are the operator styles to run (none: only the cluster).
	Styles []style.Style
	// Custom are the student's own operators, each with a pane of its own
	// after the built-in styles.
	Custom []Custom
	// Replicas overrides how many replicas a built-in style runs (2 for
	// the Go styles, 1 for the shell loop, if absent).
	Replicas map[style.Style]int
	// Unwatched styles run with --watch-owned=false (the never-repaired bug).
	Unwatched []style.Style
	// ShellInterval is the shell loop's poll interval: whole seconds, at
	// least 1 s (default 5 s).
	ShellInterval time.Duration
	// Image is what Echo pods run, given to every replica (--image) and to
	// the world, which judges drift by it; the backend's default if empty.
	Image string
	// Sample creates Echo "hello" in every style's namespace just before
	// the operators start, so that they race from the same moment.
	// WaitSample waits until every style reports it 2/2.
	Sample bool
	// Bus receives every trace event; a new one if nil.
	Bus *bus.Bus

	// Backend is the cluster to run on; the zero Backend is
	// backend.Default, envtest.
	Backend backend.Backend
	// KindImage is the kind node image; "" lets the kind backend choose.
	KindImage string
	// Kubeconfig and Context name the existing cluster of backend.Kubeconfig
	// ("": $KUBECONFIG or ~/.kube/config, and its current context).
	Kubeconfig, Context string
	// NamespacePrefix starts every namespace the sandbox uses; on
	// backend.Kubeconfig "" derives one from the user (tenancy.DefaultPrefix).
	NamespacePrefix string
	// Note, if set, is told of things worth a line to the user.
	Note func(string)
}

// Sample Echo created at start.
const (
	SampleName     = "hello"
	SampleMessage  = "hello from rlab"
	SampleReplicas = 2
)

// Sandbox is a running sandbox.
type Sandbox struct {
	opts    Options
	lock    *state.Lock
	backend cluster.Cluster
	bus     *bus.Bus
	admin   *clients
	// you is the student's proxy, and hands the clients through it: what
	// the student does (their kubectl, a key, autoplay, `rlab do`) shows as
	// theirs (trace.SourceYou), apart from what rlab does on its own.
	you       *proxy.Proxy
	youConfig *rest.Config
	hands     *clients
	world     *world.World
	super     *supervisor.Supervisor
	proxies   map[string]*proxy.Proxy
	// styles are the built-in styles, then the custom operators' names.
	styles []style.Style
	// identities are the operators' ServiceAccounts, one per style.
	identities map[style.Style]*cluster.Identity
	// prefix starts the style namespaces; shared says the cluster outlives
	// the sandbox, and owned lists the namespaces it created there.
	prefix style.Prefix
	shared bool
	owned  []string
	// granted are the RBAC objects made for operators' own RBAC
	// (Custom.RBAC) that Stop deletes.
	granted []grantedObject
	cancel  context.CancelFunc // stops the world's informers

	shellScript, shellKubectl string
	// Reaped lists processes a previous, killed run had left behind.
	Reaped []proc.Entry
	// ClusterReady is how long Start took: the cluster is ready and the
	// operators have started. Ready is that plus the sample's convergence,
	// once WaitSample has returned (until then it equals ClusterReady).
	ClusterReady, Ready time.Duration
	// Converged is, per style, how long after the operators started its
	// replicas reported the sample 2/2 (set by WaitSample).
	Converged map[style.Style]time.Duration

	began, operatorsStarted time.Time

	phases []cluster.Phase
	marks  []cluster.Mark // the sandbox's own start-up moments, since began

	// tmp is the children's TMPDIR, under the run dir.
	tmp string

	// webhook is where controller-runtime's replica a serves its
	// validating webhook, or nil, and noWebhook then says why.
	webhook   *webhookServer
	noWebhook error
}

// Start checks opts as Validate does, takes the state dir (or fails with
// *state.BusyError), reaps whatever a killed previous run left, and starts
// the cluster. On error nothing is left running.
func Start(ctx context.Context, opts Options) (_ *Sandbox, err error) {
	began := time.Now()
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	styles, err := opts.check()
	if err != nil {
		return nil, err
	}
	if opts.Bus == nil {
		opts.Bus = bus.New()
	}
	if opts.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("locate rlab binary: %w", err)
		}
		opts.Self = self
	}
	lock, err := opts.State.Acquire()
	if err != nil {
		return nil, err
	}
	s := &Sandbox{opts: opts, lock: lock, bus: opts.Bus, proxies: map[string]*proxy.Proxy{}, identities: map[style.Style]*cluster.Identity{},
		began: began, styles: styles}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()
	s.mark("state dir locked")
	if s.Reaped, err = proc.Reap(opts.State.PIDs(), 10*time.Second); err != nil {
		return nil, fmt.Errorf("clean up previous run: %w", err)
	}
	for _, e := range s.Reaped {
		opts.Log.Warn("killed a process left by a previous run", "name", e.Name, "pid", e.PID)
	}
	if err := os.RemoveAll(opts.State.Run()); err != nil {
		return nil, fmt.Errorf("clean up previous run: %w", err)
	}
	// The children rlab starts (the control plane, the operators: the shell
	// loop's mktemp) write temp files that a killed run cannot remove; given
	// a TMPDIR under the run dir, the next start does. rlab's own is left be.
	s.tmp = filepath.Join(opts.State.Run(), "tmp")
	for _, d := range []string{s.tmp, opts.State.Logs()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
	}
	if s.prefix, err = style.ParsePrefix(opts.NamespacePrefix); err != nil {
		return nil, err
	}
	if s.backend, err = newBackend(opts, s.prefix, s.tmp); err != nil {
		return nil, err
	}
	s.mark("previous run cleaned up; the backend starts")
	if err := s.backend.Start(ctx); err != nil {
		return nil, err
	}
	s.mark("backend started")
	if s.backend.Type().Shared {
		s.shared, s.prefix = true, s.backend.(cluster.Tenant).Prefix()
	}
	s.opts.Image = workloadImage(s.backend, opts.Image)
	if err := s.startEngine(ctx); err != nil {
		return nil, err
	}
	// Written last: `rlab env` hands it out, so it must point at a ready
	// cluster. It is the student's proxy, with the backend's identity behind
	// it: what the student types is traced as theirs.
	kc, err := s.you.Kubeconfig("")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(opts.State.Kubeconfig(), kc, 0o600); err != nil {
		return nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	s.ClusterReady = time.Since(began)
	s.Ready = s.ClusterReady
	s.mark("kubeconfig written: cluster ready")
	return s, nil
}

// Began is when Start was called: ClusterReady and Ready count from it.
func (s *Sandbox) Began() time.Time { return s.began }

// OptionError is an Options field that cannot work, said before anything
// starts: rlab's commands name the flag that set it.
type OptionError struct {
	Option string // the field, e.g. "ShellInterval"
	Value  string // as given
	Want   string // what would work, e.g. "want a positive duration, e.g. 5s"
}

func (e *OptionError) Error() string { return fmt.Sprintf("%s %s: %s", e.Option, e.Value, e.Want) }

// Validate says what in o cannot work, before anything starts: an
// *OptionError for a bad value of one option, or an error naming the
// operator whose replicas, name, command or role is wrong. Start checks
// the same.
func (o Options) Validate() error {
	o.Custom = slices.Clone(o.Custom) // check fills in their defaults
	_, err := o.check()
	return err
}

// check validates o and fills in its defaults (ShellInterval, the custom
// operators' replicas and roles), and returns every style's name in screen
// order.
func (o *Options) check() ([]style.Style, error) {
	// The shell loop is given whole seconds (--interval N); a smaller or
	// fractional interval would be cut to what it does not say.
	switch d := o.ShellInterval; {
	case d == 0:
		o.ShellInterval = 5 * time.Second
	case d < 0:
		return nil, &OptionError{"ShellInterval", d.String(), "want a positive duration, e.g. 5s"}
	case d < time.Second || d%time.Second != 0:
		return nil, &OptionError{"ShellInterval", d.String(), "want whole seconds, at least 1s (rlab gives the shell loop whole seconds), e.g. 5s"}
	}
	for _, img := range []struct{ field, v, eg string }{{"Image", o.Image, echo.DefaultImage}, {"KindImage", o.KindImage, cluster.OfflineNodeImage}} {
		if img.v == "" {
			continue // the backend's default
		}
		if err := echo.CheckImage(img.v, img.eg); err != nil {
			return nil, &OptionError{img.field, fmt.Sprintf("%q", img.v), err.Error()}
		}
	}
	if _, err := style.ParsePrefix(o.NamespacePrefix); err != nil {
		return nil, err
	}
	return checkStyles(o)
}

// checkStyles checks the built-in styles and the custom operators (and
// fills in their defaults), and returns every style's name in screen order.
func checkStyles(opts *Options) ([]style.Style, error) {
	var all []style.Style
	for _, st := range opts.Styles {
		if _, err := style.Parse(string(st)); err != nil {
			return nil, err
		}
		if n := opts.Replicas[st]; n < 0 || n > MaxReplicas {
			return nil, fmt.Errorf("%s: %d replicas, want 1 to %d", st, n, MaxReplicas)
		}
		all = append(all, st)
	}
	for i := range opts.Custom {
		c := &opts.Custom[i]
		if _, err := style.Custom(string(c.Name)); err != nil {
			return nil, err
		}
		if slices.Contains(all, c.Name) {
			return nil, fmt.Errorf("two operators are named %q", c.Name)
		}
		if strings.TrimSpace(c.Command) == "" && c.Script == nil && c.Project == nil {
			return nil, fmt.Errorf("operator %s: no command to run", c.Name)
		}
		if c.Replicas == 0 {
			c.Replicas = 1
		}
		if c.Replicas < 0 || c.Replicas > MaxReplicas {
			return nil, fmt.Errorf("operator %s: %d replicas, want 1 to %d", c.Name, c.Replicas, MaxReplicas)
		}
		role, err := ParseRole(c.Role)
		if err != nil {
			return nil, fmt.Errorf("operator %s: %w", c.Name, err)
		}
		c.Role = role
		if c.RBAC != nil {
			if role == RoleNamespaceAdmin {
				return nil, fmt.Errorf("operator %s: its own RBAC and role %s exclude each other: it is granted one or the other", c.Name, role)
			}
			if len(c.RBAC.Cluster)+len(c.RBAC.Namespaced) == 0 {
				return nil, fmt.Errorf("operator %s: its RBAC (%s) grants no role", c.Name, c.RBAC.Path)
			}
		}
		all = append(all, c.Name)
	}
	return all, nil
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

// startEngine starts what runs on top of the cluster: the world observer,
// the operators with their proxies, and the sample Echo.
func (s *Sandbox) startEngine(ctx context.Context) error {
	admin, err := newClients(s.backend.Config())
	if err != nil {
		return err
	}
	s.admin = admin
	// Others' credentials pass through it: its kubeconfig can be another
	// rlab's existing cluster, or a classroom's, whose identities are tokens.
	if s.you, err = proxy.Start(proxy.Options{Name: trace.YouProxy, Upstream: s.backend.Config(),
		Publish: s.bus.Publish, Log: s.opts.Log, PassForeign: true}); err != nil {
		return fmt.Errorf("your proxy: %w", err)
	}
	s.youConfig = &rest.Config{Host: s.you.URL(), BearerToken: s.you.Token(),
		TLSClientConfig: rest.TLSClientConfig{CAData: s.you.CAData()}}
	if s.hands, err = newClients(s.youConfig); err != nil {
		return err
	}
	if len(s.styles) == 0 {
		return nil
	}
	for _, st := range s.styles {
		if ns := s.Namespace(st); len(ns) > 63 {
			return fmt.Errorf("namespace %s is longer than 63 characters: use a shorter operator name or namespace prefix", ns)
		}
	}
	if s.shared {
		t0 := time.Now()
		if err := s.removeLeftovers(ctx); err != nil {
			return err
		}
		s.phase("namespaces "+string(s.prefix)+"*", time.Since(t0))
	}
	var (
		nss    []string
		labels map[string]string
	)
	if s.shared {
		labels = tenancy.OwnedLabels(s.prefix)
	}
	for _, st := range s.styles {
		ns := s.Namespace(st)
		nss = append(nss, ns)
		role := RoleLeast
		c := s.custom(st)
		if c != nil {
			role = c.Role
			if c.RBAC != nil {
				role = roleOwn
			}
		}
		id, owned, err := setupStyle(ctx, s.backend.Config(), admin.kube, ns, labels, st, role)
		if owned {
			s.owned = append(s.owned, ns)
		}
		if err != nil {
			return err
		}
		if role == roleOwn {
			if err := s.grantRBAC(ctx, ns, id.Subject, c.RBAC, owned); err != nil {
				return fmt.Errorf("operator %s's own RBAC: %w", st, err)
			}
		}
		s.identities[st] = id
	}
	// The world outlives Start's ctx: it runs until Stop.
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	w, err := world.Start(wctx, world.Options{Config: s.backend.Config(), Namespaces: nss, Publish: s.bus.Publish,
		Log: s.opts.Log, Image: s.opts.Image})
	if err != nil {
		return fmt.Errorf("world: %w", err)
	}
	s.world = w
	s.mark("namespaces and identities made, world synced")
	// The sample goes first: every operator's first look (the shell loop's
	// first poll, the informers' initial list) finds it, so the three start
	// the race together and the screen can show it from the start.
	if s.opts.Sample {
		if err := s.applySample(ctx); err != nil {
			return err
		}
	}
	if err := s.setupWebhook(ctx); err != nil {
		return err
	}
	s.mark("sample created")
	t0 := time.Now()
	if err := s.startOperators(); err != nil {
		return err
	}
	s.operatorsStarted = t0
	s.phase("operators started", time.Since(t0))
	return nil
}

// WaitSample waits until every style reports the sample Echo 2/2, records
// each style's time since the operators started (Converged) and the phase,
// and moves Ready on. Start must have created the sample (Options.Sample).
func (s *Sandbox) WaitSample(ctx context.Context) error {
	if !s.opts.Sample || len(s.styles) == 0 {
		return nil
	}
	// The shell loop polls: give it a few intervals.
	wait := 60*time.Second + 3*s.opts.ShellInterval
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	want := fmt.Sprintf("%d/%d", SampleReplicas, SampleReplicas)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	converged := map[style.Style]time.Duration{}
	for _, st := range s.styles {
		wg.Go(func() {
			err := s.world.WaitFor(ctx, func(sn world.Snapshot) bool { return styleReady(sn, st, SampleName, want) })
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st, err))
				return
			}
			converged[st] = time.Since(s.operatorsStarted)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sample Echo %s not %s in every style within %s: %w%s", SampleName, want, wait, err, s.podTrouble())
	}
	s.Converged = converged
	s.phase("sample echo "+want, time.Since(s.operatorsStarted))
	s.Ready = time.Since(s.began)
	return nil
}

// podTrouble says why the Echo pods are not Ready, if a container says so
// (an image that cannot be pulled, a crash), as "; pod NS/NAME: REASON: MESSAGE".
func (s *Sandbox) podTrouble() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	for _, st := range s.styles {
		pods, err := s.admin.kube.CoreV1().Pods(s.Namespace(st)).List(ctx, metav1.ListOptions{LabelSelector: echo.LabelKey})
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			for _, c := range p.Status.ContainerStatuses {
				if w := c.State.Waiting; w != nil && w.Reason != "ContainerCreating" {
					fmt.Fprintf(&out, "; pod %s/%s: %s: %s", p.Namespace, p.Name, w.Reason, w.Message)
					break
				}
			}
		}
	}
	return out.String()
}

// styleReady is true when style st's Echo name reports status want.
func styleReady(sn world.Snapshot, st style.Style, name, want string) bool {
	ns := sn.Style(st)
	return ns != nil && ns.Echoes[name] != nil && ns.Echoes[name].Ready == want
}

// mark records a moment of the sandbox's own start-up, for the timeline.
func (s *Sandbox) mark(what string) {
	s.marks = append(s.marks, cluster.Mark{At: time.Since(s.began), Who: "rlab", What: what})
}

// Marks are the sandbox's own start-up moments (the backend's are its
// Timeline), each since Began.
func (s *Sandbox) Marks() []cluster.Mark { return append([]cluster.Mark(nil), s.marks...) }

func (s *Sandbox) phase(name string, took time.Duration) {
	p := cluster.Phase{Name: name, Took: took}
	s.phases = append(s.phases, p)
	if s.opts.Progress != nil {
		s.opts.Progress(p)
	}
}

// Phases are the backend's start-up phases followed by the sandbox's own.
func (s *Sandbox) Phases() []cluster.Phase {
	return append(s.backend.Phases(), s.phases...)
}

// Bus carries every trace event of the sandbox.
func (s *Sandbox) Bus() *bus.Bus { return s.bus }

// Snapshot is the live model of the style namespaces now (empty with no
// operators).
func (s *Sandbox) Snapshot() world.Snapshot {
	if s.world == nil {
		return world.Snapshot{}
	}
	return s.world.Snapshot()
}

// WaitFor waits until cond holds of the live model, or ctx ends.
func (s *Sandbox) WaitFor(ctx context.Context, cond func(world.Snapshot) bool) error {
	return s.world.WaitFor(ctx, cond)
}

// Settling is how many of the live model's judgments wait for their settle
// time: at 0, every event derived from what it has seen is published.
func (s *Sandbox) Settling() int { return s.world.Settling() }

// Changes tells of each change of the live model (changed has room for
// one consumer) until it stops (done); both nil with no operators.
func (s *Sandbox) Changes() (changed, done <-chan struct{}) {
	if s.world == nil {
		return nil, nil
	}
	return s.world.Changed(), s.world.Done()
}

// Namespace is the namespace of style st: its prefix, then "echo-<style>".
func (s *Sandbox) Namespace(st style.Style) string { return s.prefix.Namespace(st) }

// Prefix starts every style namespace ("" on a sandbox's own cluster).
func (s *Sandbox) Prefix() style.Prefix { return s.prefix }

// Styles are the styles running: the built-in ones, then the custom ones.
func (s *Sandbox) Styles() []style.Style { return s.styles }

// Custom is the custom operator named st, if it is one.
func (s *Sandbox) Custom(st style.Style) (Custom, bool) {
	if c := s.custom(st); c != nil {
		return *c, true
	}
	return Custom{}, false
}

// Backend is the running cluster.
func (s *Sandbox) Backend() cluster.Cluster { return s.backend }

// Image is what Echo pods run: Options.Image, or the backend's default.
func (s *Sandbox) Image() string { return s.opts.Image }

// Kubeconfig is the path of the kubeconfig `rlab env` hands out: the
// student's proxy (trace.SourceYou), acting with the backend's identity.
func (s *Sandbox) Kubeconfig() string { return s.opts.State.Kubeconfig() }

// Kubectl is the kubectl rlab runs (the shell loop's), the one a student
// is told to use.
func (s *Sandbox) Kubectl() string { return filepath.Join(s.opts.Assets, "kubectl") }

// Stop stops everything Start started, removes the run files and releases the
// state dir. It is safe to call more than once.
func (s *Sandbox) Stop() error {
	var errs []error
	if s.super != nil {
		errs = append(errs, s.super.Close(5*time.Second))
		s.super = nil
	}
	for name, p := range s.proxies {
		errs = append(errs, p.Close())
		delete(s.proxies, name)
	}
	if s.you != nil {
		errs = append(errs, s.you.Close())
		s.you = nil
	}
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	if len(s.granted) > 0 && s.admin != nil {
		// An operator's own RBAC that its namespace would not take with
		// it (ClusterRoles, a prepared namespace's Roles) goes now, as
		// its namespace does, whether the cluster stays or not.
		errs = append(errs, s.revokeRBAC())
	}
	if s.shared && s.admin != nil {
		// Only now: the operators are gone and cannot recreate anything.
		errs = append(errs, s.removeOwn())
		s.shared = false
	}
	if s.backend != nil {
		errs = append(errs, s.backend.Stop())
		s.backend = nil
	}
	if s.lock != nil {
		// Anything still recorded was not stopped cleanly: kill it now.
		if _, err := proc.Reap(s.opts.State.PIDs(), 10*time.Second); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, os.RemoveAll(s.opts.State.Run()))
		s.lock.Release()
		s.lock = nil
	}
	return errors.Join(errs...)
}
