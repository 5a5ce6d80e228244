// Package sandbox is rlab's engine: it owns the state directory, cleans up
// after a run that was killed, starts the cluster backend and tears it all
// down again. It knows nothing of the screen.
package sandbox

import (
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
	// Early makes Start return after its first phase: the apiserver
	// serves, the Echo CRD is established, the Nodes are Ready and the
	// engine is set up (namespaces, identities, the world, the sample, the
	// proxies). The rest (the operators, the apiserver's post-start hooks,
	// the controllers) comes up behind it, traced as rlab.startup;
	// WaitClusterReady and WaitOperators wait for it. Without Early, Start
	// waits itself.
	Early bool
}

// Sample Echo created at start.
const (
	SampleName     = "hello"
	SampleMessage  = "hello from rlab"
	SampleReplicas = 2
)

// Sandbox is a running sandbox: the composition root of the engine's
// parts, each holding the state it owns. Start builds them, Stop stops
// them, and callers take the part they use.
type Sandbox struct {
	opts Options
	lock *state.Lock
	bus  *bus.Bus
	sc   scope

	cluster *Cluster
	world   *World
	ops     *Operators
	faults  *Faults
	flags   *Flags
	customs *Customs
	shipped shipments
	student *Student
	api     *StudentAPI
	admin   *Admin

	// Reaped lists processes a previous, killed run had left behind.
	Reaped []proc.Entry
	// How long after Start was called the apiserver served (Start's first
	// phase), the cluster was ready (kwokctl's --wait: the apiserver
	// healthy, every component running) and the sample was 2/2 everywhere.
	// ClusterReady is set once WaitClusterReady has returned; Ready once
	// WaitSample has (until then it equals ClusterReady).
	Serving, ClusterReady, Ready time.Duration
	// Converged is, per style, how long after the operators started its
	// replicas reported the sample 2/2 (set by WaitSample).
	Converged map[style.Style]time.Duration

	operatorsStarted time.Time
	// second is Start's second phase, running behind an Early Start.
	second *phase
}

// phase is the work Start leaves running: ready closes once the cluster is
// ready, done once the phase ends, with err.
type phase struct {
	ready, done chan struct{}
	err         error
	cancel      context.CancelFunc
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
	c := &Cluster{began: began, progress: opts.Progress, log: opts.Log, note: opts.Note,
		kubeconfig: opts.State.Kubeconfig(), assets: opts.Assets}
	s := &Sandbox{opts: opts, lock: lock, bus: opts.Bus, cluster: c, sc: scope{styles: styles}}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()
	c.mark("state dir locked")
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
	c.tmp = filepath.Join(opts.State.Run(), "tmp")
	for _, d := range []string{c.tmp, opts.State.Logs()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
	}
	prefix, err := style.ParsePrefix(opts.NamespacePrefix)
	if err != nil {
		return nil, err
	}
	if c.backend, err = newBackend(opts, prefix, c.tmp); err != nil {
		return nil, err
	}
	c.mark("previous run cleaned up; the backend starts")
	phased, threePhases := c.backend.(cluster.Phased)
	if threePhases {
		if err := phased.Serve(ctx); err != nil {
			return nil, err
		}
		c.mark("backend serving")
	} else {
		if err := c.backend.Start(ctx); err != nil {
			return nil, err
		}
		c.mark("backend started")
	}
	if c.backend.Type().Shared {
		c.shared, prefix = true, c.backend.(cluster.Tenant).Prefix()
	}
	s.sc.prefix = prefix
	c.sc = s.sc
	s.opts.Image = workloadImage(c.backend, opts.Image)
	c.image = s.opts.Image
	startOperators, err := s.startEngine(ctx)
	if err != nil {
		return nil, err
	}
	s.Serving = time.Since(began)
	s.second = &phase{ready: make(chan struct{}), done: make(chan struct{}), cancel: func() {}}
	if threePhases {
		s.starting("the apiserver serves", NextOperators)
	} else {
		s.starting("the cluster is ready", NextOperatorsOnly)
	}
	second := func(ctx context.Context) error {
		// The operators need of the apiserver's bootstrap only the
		// discovery roles, which the backend's first phase made.
		if err := startOperators(ctx); err != nil {
			return err
		}
		if threePhases {
			s.starting("the operators started", NextControllers)
			if err := phased.Ready(ctx); err != nil {
				return err
			}
		}
		// Written at cluster ready: `rlab env` hands it out, so it must
		// point at a ready cluster. It is the student's proxy, with the
		// backend's identity behind it: what the student types is traced
		// as theirs.
		kc, err := s.student.you.Kubeconfig("")
		if err != nil {
			return err
		}
		if err := os.WriteFile(opts.State.Kubeconfig(), kc, 0o600); err != nil {
			return fmt.Errorf("write kubeconfig: %w", err)
		}
		s.ClusterReady = time.Since(began)
		s.Ready = s.ClusterReady
		c.mark("kubeconfig written: cluster ready")
		close(s.second.ready)
		if threePhases {
			s.starting("the cluster is ready", NextSettle)
			if err := phased.Settle(ctx); err != nil {
				return err
			}
			c.mark("backend started")
		}
		s.starting("started", "")
		return nil
	}
	end := func(ctx context.Context, err error) {
		s.second.err = err
		if err != nil && ctx.Err() != nil {
			s.second.err = fmt.Errorf("%w: %w", ErrStopped, err)
		}
		// Stop cancels a second phase under way: that is no failure to show.
		if err != nil && ctx.Err() == nil {
			s.bus.Publish(trace.Event{Time: time.Now(), Source: trace.SourceRlab, Kind: trace.StartupStep,
				Payload: trace.Startup{Error: err.Error()}})
		}
		close(s.second.done)
	}
	if !opts.Early {
		err := second(ctx)
		end(ctx, err)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	// It outlives Start's ctx, as the sandbox does: Stop ends it.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.second.cancel = cancel
	go func() { end(pctx, second(pctx)) }()
	return s, nil
}

// What goes on behind the screen while the sandbox starts (rlab.startup's
// Next). The screen translates them: lessonview.Formats holds each.
const (
	NextOperators   = "the operators; the apiserver's post-start hooks, then kube-controller-manager (no pods before it)"
	NextControllers = "the apiserver's post-start hooks, then kube-controller-manager (no pods before it)"
	NextSettle      = "the Nodes untainted, the controllers healthy"
	// NextOperatorsOnly: a backend that starts in one phase (kind, an
	// existing cluster) is ready before the operators start.
	NextOperatorsOnly = "the operators"
)

// starting tells the trace (and so the screen) what of the start-up is
// done, and what goes on behind it.
func (s *Sandbox) starting(done, next string) {
	s.bus.Publish(trace.Event{Time: time.Now(), Source: trace.SourceRlab, Kind: trace.StartupStep,
		Payload: trace.Startup{Done: done, Next: next}})
}

// ErrStopped is WaitClusterReady's and WaitOperators' error when Stop ended
// the start-up before they were ready: no failure of the start-up.
var ErrStopped = errors.New("the sandbox was stopped while starting")

// WaitClusterReady waits until the cluster is ready, as kwokctl's --wait
// means it: the apiserver healthy, every component running. It returns at
// once after a Start that was not Early, and the start-up's error if it
// failed first; the sandbox must then be stopped.
func (s *Sandbox) WaitClusterReady(ctx context.Context) error {
	select {
	case <-s.second.ready:
		return nil
	case <-s.second.done:
		return s.secondErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitOperators waits until Start's second phase is done: the cluster
// ready, the operators started, the controllers healthy. It returns at
// once after a Start that was not Early, and the phase's error if it
// failed; the sandbox must then be stopped.
func (s *Sandbox) WaitOperators(ctx context.Context) error {
	select {
	case <-s.second.done:
		return s.secondErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Sandbox) secondErr() error {
	if s.second.err != nil {
		return fmt.Errorf("starting the cluster's controllers and the operators: %w", s.second.err)
	}
	return nil
}

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
		if strings.TrimSpace(c.Command) == "" && c.Script == nil && c.Project == nil && !c.Shipped {
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

// startEngine builds the parts on top of the cluster and starts what runs
// there: the world observer, the operators with their proxies, and the
// sample Echo.
func (s *Sandbox) startEngine(ctx context.Context) (startOperators func(context.Context) error, err error) {
	c := s.cluster
	admin, err := newClients(c.backend.Config())
	if err != nil {
		return nil, err
	}
	c.admin = admin
	// Others' credentials pass through it: its kubeconfig can be another
	// rlab's existing cluster, or a classroom's, whose identities are tokens.
	you, err := proxy.Start(proxy.Options{Name: trace.YouProxy, Upstream: c.backend.Config(),
		Publish: s.bus.Publish, Log: s.opts.Log, PassForeign: true})
	if err != nil {
		return nil, fmt.Errorf("your proxy: %w", err)
	}
	s.student = &Student{you: you, sc: s.sc}
	youConfig := &rest.Config{Host: you.URL(), BearerToken: you.Token(),
		TLSClientConfig: rest.TLSClientConfig{CAData: you.CAData()}}
	if s.student.hands, err = newClients(youConfig); err != nil {
		return nil, err
	}
	s.api = &StudentAPI{hands: s.student.hands, youConfig: youConfig, admin: admin, sc: s.sc}
	s.admin = &Admin{admin: admin, sc: s.sc, shared: c.shared}
	s.world = &World{}
	plan := replicaPlan{custom: s.opts.Custom, counts: s.opts.Replicas, live: &liveReplicas{}}
	s.ops = &Operators{plan: plan, sc: s.sc, admin: admin, logs: s.opts.State.Logs()}
	s.faults = &Faults{plan: plan, proxies: map[string]*proxy.Proxy{}}
	s.flags = &Flags{plan: plan}
	s.customs = &Customs{plan: plan, dir: filepath.Join(s.opts.State.Run(), "operators")}
	if len(s.sc.styles) == 0 {
		return func(context.Context) error { return nil }, nil
	}
	for _, st := range s.sc.styles {
		if ns := s.sc.namespace(st); len(ns) > 63 {
			return nil, fmt.Errorf("namespace %s is longer than 63 characters: use a shorter operator name or namespace prefix", ns)
		}
	}
	if c.shared {
		t0 := time.Now()
		if err := c.removeLeftovers(ctx); err != nil {
			return nil, err
		}
		c.phase("namespaces "+string(s.sc.prefix)+"*", time.Since(t0))
	}
	var (
		nss    []string
		labels map[string]string
	)
	if c.shared {
		labels = tenancy.OwnedLabels(s.sc.prefix)
	}
	c.mark("clients and your proxy made")
	identities := map[style.Style]*cluster.Identity{}
	for _, st := range s.sc.styles {
		ns := s.sc.namespace(st)
		nss = append(nss, ns)
		role := RoleLeast
		cu := plan.customOf(st)
		if cu != nil {
			role = cu.Role
			if cu.RBAC != nil {
				role = roleOwn
			}
		}
		id, owned, err := setupStyle(ctx, c.backend.Config(), admin.kube, ns, labels, st, role)
		if owned {
			c.owned = append(c.owned, ns)
		}
		if err != nil {
			return nil, err
		}
		if role == roleOwn {
			if err := c.grantRBAC(ctx, ns, id.Subject, cu.RBAC, owned); err != nil {
				return nil, fmt.Errorf("operator %s's own RBAC: %w", st, err)
			}
		}
		identities[st] = id
	}
	c.mark("namespaces and identities made")
	// The world outlives Start's ctx: it runs until Stop.
	wctx, cancel := context.WithCancel(context.Background())
	s.world.cancel = cancel
	w, err := world.Start(wctx, world.Options{Config: c.backend.Config(), Namespaces: nss, Publish: s.bus.Publish,
		Log: s.opts.Log, Image: s.opts.Image})
	if err != nil {
		return nil, fmt.Errorf("world: %w", err)
	}
	s.world.w = w
	c.mark("namespaces and identities made, world synced")
	// The sample goes first: every operator's first look (the shell loop's
	// first poll, the informers' initial list) finds it, so the three start
	// the race together and the screen can show it from the start.
	if s.opts.Sample {
		if err := s.admin.applySample(ctx); err != nil {
			return nil, err
		}
	}
	webhook, noWebhook, err := s.setupWebhook(ctx)
	if err != nil {
		return nil, err
	}
	s.api.webhook, s.api.noWebhook = webhook, noWebhook
	c.mark("sample created")
	// The supervisor and the proxies are made now, so that every part is
	// whole when an Early Start returns; the replicas start later.
	run, err := s.startOperators(identities, webhook)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		t0 := time.Now()
		if err := run(ctx); err != nil {
			return err
		}
		s.operatorsStarted = t0
		c.phase("operators started", time.Since(t0))
		return nil
	}, nil
}

// WaitSample waits until every style reports the sample Echo 2/2, records
// each style's time since the operators started (Converged) and the phase,
// and moves Ready on. Start must have created the sample (Options.Sample).
func (s *Sandbox) WaitSample(ctx context.Context) error {
	if err := s.WaitOperators(ctx); err != nil {
		return err
	}
	if !s.opts.Sample || len(s.sc.styles) == 0 {
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
	for _, st := range s.sc.styles {
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
	s.cluster.phase("sample echo "+want, time.Since(s.operatorsStarted))
	s.Ready = time.Since(s.cluster.began)
	return nil
}

// podTrouble says why the Echo pods are not Ready, if a container says so
// (an image that cannot be pulled, a crash), as "; pod NS/NAME: REASON: MESSAGE".
func (s *Sandbox) podTrouble() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	for _, st := range s.sc.styles {
		pods, err := s.cluster.admin.kube.CoreV1().Pods(s.sc.namespace(st)).List(ctx, metav1.ListOptions{LabelSelector: echo.LabelKey})
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

// The parts, each with the state it owns.

// Cluster is the cluster the sandbox runs on, and its start-up record.
func (s *Sandbox) Cluster() *Cluster { return s.cluster }

// World is the live model of the style namespaces.
func (s *Sandbox) World() *World { return s.world }

// Operators are the operator replicas: their processes and restarts.
func (s *Sandbox) Operators() *Operators { return s.ops }

// Faults are the replicas' counting proxies: faults and partitions.
func (s *Sandbox) Faults() *Faults { return s.faults }

// Flags are the options the operator replicas run with.
func (s *Sandbox) Flags() *Flags { return s.flags }

// Customs are the student's own operators.
func (s *Sandbox) Customs() *Customs { return s.customs }

// Student acts as the student, on Echoes and what they own.
func (s *Sandbox) Student() *Student { return s.student }

// StudentAPI acts as the student on the API itself: discovery, schema,
// admission.
func (s *Sandbox) StudentAPI() *StudentAPI { return s.api }

// Admin acts as rlab itself: what it does is not the student's.
func (s *Sandbox) Admin() *Admin { return s.admin }

// Bus carries every trace event of the sandbox.
func (s *Sandbox) Bus() *bus.Bus { return s.bus }

// Namespace is the namespace of style st: its prefix, then "echo-<style>".
func (s *Sandbox) Namespace(st style.Style) string { return s.sc.namespace(st) }

// Prefix starts every style namespace ("" on a sandbox's own cluster).
func (s *Sandbox) Prefix() style.Prefix { return s.sc.prefix }

// Styles are the styles running: the built-in ones, then the custom ones.
func (s *Sandbox) Styles() []style.Style { return s.sc.styles }

// Stop stops everything Start started, removes the run files and releases the
// state dir. It is safe to call more than once.
func (s *Sandbox) Stop() error {
	var errs []error
	if s.second != nil {
		// The second phase starts what the rest stops: end it first.
		s.second.cancel()
		<-s.second.done
	}
	errs = append(errs, s.stopShipments())
	if s.ops != nil {
		errs = append(errs, s.ops.close())
	}
	if s.faults != nil {
		errs = append(errs, s.faults.close())
	}
	if s.student != nil {
		errs = append(errs, s.student.close())
	}
	if s.world != nil {
		s.world.stop()
	}
	if s.cluster != nil {
		errs = append(errs, s.cluster.stop())
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
