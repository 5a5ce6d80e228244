package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/feature/bench"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/sandbox"
)

type benchFlags struct {
	Rounds       int
	Reps         int
	Echoes       int
	Replicas     int
	ScaleTimeout time.Duration
	Idle         time.Duration
	Output       string
	JSON         string
	Kwokctl      string
	Screens      bool   // also rlab up and rlab lesson start 1 --text, in a terminal
	Operators    string // the styles to measure
	// The Go operators' tuning for the scale run; TuneCompare runs it at
	// the libraries' defaults first.
	Workers     int
	QPS         float32
	Burst       int
	TuneCompare bool
	clusterFlags
}

// tuning is the Go operators' tuning the flags ask for.
func (f benchFlags) tuning() sandbox.Tuning {
	return sandbox.Tuning{Workers: f.Workers, QPS: f.QPS, Burst: f.Burst}
}

func newBenchCmd() *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the sandbox: start-up, convergence, repair, GC, failover, API cost, scale, idle CPU",
		Long: `Run the standard measurements on fresh sandboxes in your state dir and print
one table (or JSON): start-up over --rounds rounds, each one launch of
` + "`rlab run --operators none`" + ` timed to its cluster ready line, of ` + "`rlab up`" + ` to
its main screen drawn and of ` + "`rlab lesson start 1 --text`" + ` to step 1 shown (both
in a tmux terminal; --screens=false skips them), alternated with kwokctl's
bare cluster in its default work dir if --kwokctl is given, and one
sandbox started in process, phase by phase; then on the last sandbox
edit → converged, drift → repaired, garbage collection and failover per style,
API requests at rest and per edit, CPU at rest of every process and of rlab,
and --echoes Echoes per style applied at once until converged. Before the
scale run the Go operators are restarted with --workers, --qps and --burst
(none given: the libraries' defaults, one worker, client-go 5 req/s burst 10,
controller-runtime no limit); --tune-compare runs it twice, at the defaults
and then so tuned. The report says what each replica's clients said their
limit was, and client-go's floor: the requests through its busiest limiter,
beyond the burst, at its rate.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&f.Rounds, "rounds", 3, "sandbox starts to time (the last one is measured further)")
	fs.IntVar(&f.Reps, "reps", 10, "repetitions of each edit and drift (half as many GCs and failovers)")
	fs.IntVar(&f.Echoes, "echoes", 500, "Echoes per style to apply at once (0: skip the scale run)")
	fs.IntVar(&f.Replicas, "replicas", 1, "replicas of each of those Echoes (0: a Deployment each and no pod, as on a shared cluster)")
	fs.DurationVar(&f.ScaleTimeout, "scale-timeout", 3*time.Minute, "how long the scale run waits for a style to converge")
	fs.StringVar(&f.Operators, "operators", strings.Join(launch.Names(style.All()), ","), "operator styles to measure, comma-separated (the shell loop takes many minutes over 500 Echoes)")
	fs.IntVar(&f.Workers, "workers", 0, "the Go operators' workers for the scale run (0: the libraries' default, 1)")
	fs.Float32Var(&f.QPS, "qps", 0, "the Go operators' client limit for the scale run, requests/s (0: the libraries' default; -1: none)")
	fs.IntVar(&f.Burst, "burst", 0, "the burst with --qps")
	fs.BoolVar(&f.TuneCompare, "tune-compare", false, "run the scale run at the libraries' defaults first, then with --workers, --qps and --burst")
	fs.DurationVar(&f.Idle, "idle", 30*time.Second, "window for API cost and CPU at rest")
	fs.StringVar(&f.Output, "output", "text", "text (a table) or json")
	fs.StringVar(&f.JSON, "json", "", "also write the report as JSON to `FILE`")
	fs.BoolVar(&f.Screens, "screens", true, "also time rlab up to its main screen drawn and rlab lesson start 1 --text to step 1 shown, in a terminal (tmux; skipped without it)")
	fs.StringVar(&f.Kwokctl, "kwokctl", os.Getenv("RLAB_KWOKCTL"), "kwokctl `BINARY` whose bare cluster (same control-plane binaries) to time alternately with the sandbox (or $RLAB_KWOKCTL)")
	f.clusterFlags.register(fs)
	return cmd
}

func (f benchFlags) run(ctx context.Context, stdout, stderr io.Writer) error {
	if err := f.validate(); err != nil {
		return err
	}
	ctx, stop := interruptible(ctx)
	defer stop()
	say := func(format string, a ...any) { fmt.Fprintf(stderr, "bench: "+format+"\n", a...) }
	r := bench.Report{}
	var (
		l  *launch.Launcher
		sb *sandbox.Sandbox
	)
	defer func() {
		if l != nil {
			_ = l.Close()
		}
	}()
	// A state dir that cannot work, or another rlab in it, fails here,
	// before any rlab is launched as a process.
	l0, err := launch.New()
	if err != nil {
		return err
	}
	if err := l0.Close(); err != nil {
		return err
	}
	for round := 1; round <= f.Rounds; round++ {
		if err := f.launches(ctx, round, &r, say); err != nil {
			return err
		}
		say("round %d/%d: starting a sandbox", round, f.Rounds)
		var err error
		l, sb, err = f.start(ctx)
		if err != nil {
			return err
		}
		st := bench.Startup{ClusterReady: msOf(sb.ClusterReady), Ready: msOf(sb.Ready),
			Phases: map[string]float64{}, Converged: map[string]float64{}}
		for _, p := range sb.Cluster().Phases() {
			st.Phases[p.Name] = msOf(p.Took)
			if round == 1 {
				r.PhaseList = append(r.PhaseList, p.Name)
			}
		}
		for s, d := range sb.Converged {
			st.Converged[s.String()] = msOf(d)
		}
		r.Backend, r.Version = launch.Info(sb.Cluster()).Backend, sb.Cluster().Version()
		if round < f.Rounds {
			if st.Stop, err = stopTimed(l); err != nil {
				return err
			}
			l, sb = nil, nil
		}
		r.Startups = append(r.Startups, st)
	}
	f.measure(ctx, sb, l, &r, say)
	if now, _, err := proc.RSS(); err == nil {
		r.RSSMiB = float64(now) / (1 << 20)
	}
	say("stopping the sandbox")
	took, err := stopTimed(l)
	l = nil
	if err != nil {
		return err
	}
	r.Startups[len(r.Startups)-1].Stop = took
	if f.JSON != "" {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.JSON, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if f.Output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(stdout, "rlab bench on %s (Kubernetes %s)\n", r.Backend, r.Version)
	styles, _ := parseStyles(f.Operators)
	if err := bench.WriteTable(stdout, r, styles); err != nil {
		return err
	}
	if r.SlowestLaunch != "" {
		fmt.Fprintf(stdout, "\nthe slowest launch's %s", r.SlowestLaunch)
	}
	return nil
}

// measure runs every measurement on the running sandbox; one that fails is
// noted in the report and the others go on.
func (f benchFlags) measure(ctx context.Context, sb *sandbox.Sandbox, l *launch.Launcher, r *bench.Report, say func(string, ...any)) {
	b := bench.New(sb)
	defer b.Close()
	fail := func(what string, err error) bool {
		if err != nil {
			r.Errors = append(r.Errors, fmt.Sprintf("%s: %v", what, err))
			say("%s failed: %v", what, err)
		}
		return err != nil
	}
	half := max(1, f.Reps/2)
	say("%d edits", f.Reps)
	if e, err := b.Edits(ctx, f.Reps); !fail("edits", err) {
		r.Edit = &e
	}
	say("%d drifts", f.Reps)
	if d, err := b.Drift(ctx, f.Reps); !fail("drift", err) {
		r.Drift = d
	}
	say("%d Echo deletions", half)
	if g, err := b.GC(ctx, half); !fail("gc", err) {
		r.GC = g
	}
	say("%d failovers per way and style", half)
	if fo, err := b.Failover(ctx, half); !fail("failover", err) {
		r.Failover = fo
	}
	say("%s at rest", f.Idle)
	var (
		cpu     bench.CPU
		cpuErr  error
		cpuDone = make(chan struct{})
	)
	go func() {
		defer close(cpuDone)
		cpu, cpuErr = b.IdleCPU(ctx, l.Dir.PIDs(), f.Idle)
	}()
	idle, err := b.Idle(ctx, f.Idle)
	<-cpuDone
	if !fail("idle API", err) {
		r.Idle = idle
	}
	if !fail("idle CPU", cpuErr) {
		r.CPU = &cpu
	}
	if f.Echoes == 0 {
		return
	}
	// Each run starts from freshly restarted Go operators, tuned or not:
	// the runs compared differ only in their flags.
	runs := []**bench.ScaleResult{&r.Scale}
	tunings := []sandbox.Tuning{f.tuning()}
	if f.TuneCompare {
		runs = []**bench.ScaleResult{&r.ScaleDefaults, &r.Scale}
		tunings = []sandbox.Tuning{{}, f.tuning()}
	}
	for i, t := range tunings {
		say("Go operators restarted with %s", t)
		if fail("tune", b.Tune(ctx, t)) {
			return
		}
		say("%d Echoes per style at once", f.Echoes)
		s, err := b.Scale(ctx, f.Echoes, f.Replicas, f.ScaleTimeout, func(m string) { say("%s", m) })
		if !fail("scale", err) {
			*runs[i] = &s
		}
	}
}

// start starts one sandbox, as `rlab run` would, and waits for the sample.
func (f benchFlags) start(ctx context.Context) (*launch.Launcher, *sandbox.Sandbox, error) {
	styles, _ := parseStyles(f.Operators) // validated
	opts := launch.Options{Options: sandbox.Options{Styles: styles, ShellInterval: 5 * time.Second, Sample: true}, Report: launch.Report{}}
	if err := f.apply(&opts); err != nil {
		return nil, nil, err
	}
	l, err := launch.New()
	if err != nil {
		return nil, nil, err
	}
	sb, err := l.Start(ctx, opts)
	if err != nil {
		_ = l.Close()
		return nil, nil, startErr(ctx, err)
	}
	return l, sb, nil
}

// launches times, on the local control plane, one start and stop of rlab
// as a user launches it (`rlab run --operators none`, to its cluster ready
// line), with --screens one of `rlab up` (to its main screen drawn) and one
// of `rlab lesson start 1 --text` (to step 1 shown), and with --kwokctl one
// of kwokctl's bare cluster; their order reverses by round: none always
// runs on a machine another has just warmed up or left busy.
func (f benchFlags) launches(ctx context.Context, round int, r *bench.Report, say func(string, ...any)) error {
	if b, err := backend.Parse(f.Backend); err != nil || !b.LocalControlPlane {
		return err // the other backends start no control plane of rlab's
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("rlab's own binary: %w", err)
	}
	if strings.HasSuffix(self, ".test") {
		// A test binary run in process: launching it would run its tests.
		return fmt.Errorf("rlab bench launches rlab itself, and %s is a test binary: run the rlab binary", self)
	}
	// The control plane is there before the launched rlab looks for it:
	// it must time a start, not a build.
	if _, err := launch.Assets(ctx); err != nil {
		return err
	}
	proc := func() error {
		dir, err := os.MkdirTemp("", "rlab-bench-run-")
		if err != nil {
			return err
		}
		say("round %d/%d: rlab run --operators none, as a process", round, f.Rounds)
		start, stop, timeline, err := bench.ProcessStartStop(ctx, self, dir)
		if err != nil {
			return fmt.Errorf("rlab run as a process: %w", err)
		}
		if slices.IndexFunc(r.Launches, func(p bench.Peer) bool { return p.Start > msOf(start) }) < 0 {
			r.SlowestLaunch = timeline // the slowest so far
		}
		r.Launches = append(r.Launches, bench.Peer{Start: msOf(start), Stop: msOf(stop)})
		return os.RemoveAll(dir)
	}
	order := []func() error{proc}
	if f.Screens {
		order = append(order, func() error { return f.screen(ctx, self, round, bench.UpMain, &r.Screens, r, say) },
			func() error { return f.screen(ctx, self, round, bench.LessonStep, &r.Lessons, r, say) })
	}
	if f.Kwokctl != "" {
		order = append(order, func() error { return f.peer(ctx, r, say) })
	}
	if round%2 == 1 {
		slices.Reverse(order)
	}
	for _, run := range order {
		if err := run(); err != nil {
			return err
		}
	}
	return nil
}

// screen times one start and stop of rlab in a terminal, as s says, into
// runs; without tmux it notes once that those are skipped.
func (f benchFlags) screen(ctx context.Context, self string, round int, s bench.Screened, runs *[]bench.Peer, r *bench.Report, say func(string, ...any)) error {
	if r.ScreensSkipped != "" {
		return nil
	}
	dir, err := os.MkdirTemp("", "rlab-bench-screen-")
	if err != nil {
		return err
	}
	say("round %d/%d: rlab %s, in a terminal", round, f.Rounds, strings.Join(s.Args, " "))
	start, stop, err := bench.ScreenStartStop(ctx, self, dir, s)
	if errors.Is(err, bench.ErrNoTmux) {
		r.ScreensSkipped = "no tmux"
		say("no tmux on PATH: rlab up and rlab lesson start are not timed")
		return os.RemoveAll(dir)
	}
	if err != nil {
		return fmt.Errorf("rlab %s in a terminal: %w", strings.Join(s.Args, " "), err)
	}
	*runs = append(*runs, bench.Peer{Start: msOf(start), Stop: msOf(stop)})
	return os.RemoveAll(dir)
}

// peer times one start and stop of kwokctl's bare cluster, in kwokctl's
// default work dir, as its README runs it.
func (f benchFlags) peer(ctx context.Context, r *bench.Report, say func(string, ...any)) error {
	assets, err := launch.Assets(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "rlab-bench-kwokctl-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	say("kwokctl: create and delete a bare cluster")
	start, stop, err := bench.KwokctlStartStop(ctx, f.Kwokctl, assets, dir, "")
	if err != nil {
		return fmt.Errorf("kwokctl: %w", err)
	}
	r.PeerName = "kwokctl"
	r.Peers = append(r.Peers, bench.Peer{Start: msOf(start), Stop: msOf(stop)})
	return nil
}

func stopTimed(l *launch.Launcher) (float64, error) {
	t0 := time.Now()
	err := l.Close()
	return msOf(time.Since(t0)), err
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
