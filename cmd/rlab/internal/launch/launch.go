// Package launch is the start-up sequence every rlab command that runs a
// sandbox shares: claim the state dir, find (or build) the control plane,
// make the trace bus, start the sandbox, then rlab do's control socket, the
// recorder and the lesson session; and the shutdown in the reverse order. The commands (up, run,
// lesson) are flags over it, as kind's commands are flags over its cluster
// provider:
//
//	l, err := launch.New() // *state.BusyError if a sandbox runs already
//	...
//	defer l.Close()
//	sb, err := l.Start(ctx, launch.Options{Options: sandbox.Options{Styles: style.All(), Sample: true}, Report: launch.Print(os.Stderr)})
package launch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kkloud/rlab/cmd/rlab/internal/control"
	"github.com/kkloud/rlab/lessons/actions"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/feature/classroom"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/tui"
)

// Options say what to start and who is told how it goes: the sandbox's own
// options (what Start does not fill in itself: State, Assets, Log, Bus,
// Progress and Note are the launcher's), and the launcher's.
type Options struct {
	sandbox.Options
	// NoWait leaves the sample's convergence to the caller, who judges it
	// (rlab check): Start returns once the operators have started.
	// Otherwise, with Sample, Start waits until every style has it ready,
	// but not for the screen, whose panes show that race as it happens.
	NoWait bool
	Report Report
	// Screen makes Source, the screen's view of the sandbox.
	Screen bool
	// Follow, if set, is the lesson the screen follows: Start makes Session.
	Follow *Follow
}

// AllStyles are the built-in styles, then the custom operators' names: the
// panes, in order.
func (o Options) AllStyles() []style.Style {
	all := slices.Clone(o.Styles)
	for _, c := range o.Custom {
		all = append(all, c.Name)
	}
	return all
}

// StartError is a sandbox that did not start; everything it had started was
// stopped.
type StartError struct {
	Err  error
	Logs string // where the sandbox's logs are
}

func (e *StartError) Error() string {
	return fmt.Sprintf("start sandbox: %v (logs in %s)", e.Err, e.Logs)
}

func (e *StartError) Unwrap() error { return e.Err }

// Launcher starts one sandbox in the user's state dir and stops it.
type Launcher struct {
	Dir   state.Dir
	Bus   *bus.Bus  // subscribe before Start to miss nothing
	Began time.Time // when New was called: the session's start
	log   *slog.Logger
	logs  io.Closer

	mu          sync.Mutex
	sb          *sandbox.Sandbox
	stopped     bool
	source      *sandboxSource
	session     tui.Session
	sessionStop func()
	control     *control.Server     // rlab do's socket, while the sandbox runs
	reporter    *classroom.Reporter // on a classroom: the student's progress
	resetStops  []func()            // end the instructor's resets, and wait

	recTo     io.Writer    // RecordTo's file
	recClose  func() error // finishes it
	recCancel context.CancelFunc
	recDone   chan struct{}
	recErr    error

	closeOnce sync.Once
	closeErr  error
}

// New claims the user's state dir ($XDG_STATE_HOME/rlab) and sends rlab's
// logs there. It returns *state.BusyError if a sandbox runs there already.
func New() (*Launcher, error) {
	d, err := state.Default(os.Getenv)
	if err != nil {
		return nil, err
	}
	if pid := d.Running(); pid != 0 {
		return nil, &state.BusyError{Root: d.Root, PID: pid}
	}
	log, logs, err := openLog(d)
	if err != nil {
		return nil, err
	}
	return &Launcher{Dir: d, Bus: bus.New(), Began: time.Now(), log: log, logs: logs}, nil
}

// Start finds (or builds) the control plane, starts the sandbox, the
// recorder and the lesson session, and returns the sandbox. An error from the
// sandbox itself is a *StartError, or a *state.BusyError if another rlab
// claimed the state dir first. Close stops whatever was started.
func (l *Launcher) Start(ctx context.Context, o Options) (*sandbox.Sandbox, error) {
	o.Backend = cmp.Or(o.Backend, backend.Default)
	dir, err := ensureAssets(ctx, o.Backend, o.Report)
	if err != nil {
		return nil, err
	}
	var screen, recSub *bus.Sub
	if o.Screen {
		screen = l.Bus.Subscribe(tui.SubSize)
	}
	if l.recTo != nil {
		recSub = l.Bus.Subscribe(1 << 16)
	}
	sb, err := l.startSandbox(ctx, dir, o)
	if err != nil {
		for _, sub := range []*bus.Sub{screen, recSub} {
			if sub != nil {
				sub.Close() // nobody will drain them
			}
		}
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sb = sb
	l.serve(sb, o.Report)
	l.startReporter(ctx, sb, o.Report)
	if o.Screen || l.recTo != nil {
		l.source = newSandboxSource(ctx, sb, screen)
	}
	if l.recTo != nil {
		l.record(recSub, sb.Styles())
	}
	if o.Follow != nil {
		return sb, l.follow(ctx, o.Follow)
	}
	return sb, nil
}

// startSandbox starts the sandbox proper: the control plane, the operators
// and the sample Echo.
func (l *Launcher) startSandbox(ctx context.Context, assetsDir string, o Options) (*sandbox.Sandbox, error) {
	if o.Report.Starting != nil {
		o.Report.Starting(l.Dir, o.Backend)
	}
	so := o.Options
	so.State, so.Assets, so.Log, so.Bus, so.Progress, so.Note = l.Dir, assetsDir, l.log, l.Bus, o.Report.Phase, o.Report.Note
	// Start returns as the apiserver serves; the rest comes up behind it.
	// The screen opens then, and its panes say what is still starting;
	// every other caller waits here, and reports the cluster ready as it
	// comes.
	so.Early = true
	sb, err := sandbox.Start(ctx, so)
	if busy := (*state.BusyError)(nil); errors.As(err, &busy) {
		return nil, err
	}
	if err != nil {
		return nil, &StartError{Err: err, Logs: l.Dir.Logs()}
	}
	for _, e := range sb.Reaped {
		if o.Report.Note != nil {
			o.Report.Note(fmt.Sprintf("cleaned up %s (pid %d) left by a previous run", e.Name, e.PID))
		}
	}
	if o.Report.Serving != nil {
		o.Report.Serving(sb)
	}
	if o.Screen {
		go l.awaitOperators(ctx, sb, o.Report)
		return sb, nil
	}
	failed := func(err error) (*sandbox.Sandbox, error) {
		_ = sb.Stop()
		return nil, &StartError{Err: err, Logs: l.Dir.Logs()}
	}
	if err := sb.WaitClusterReady(ctx); err != nil {
		return failed(err)
	}
	if o.Report.ClusterReady != nil {
		o.Report.ClusterReady(sb)
	}
	if err := sb.WaitOperators(ctx); err != nil {
		return failed(err)
	}
	if o.Sample && !o.NoWait {
		if err := sb.WaitSample(ctx); err != nil {
			return failed(err)
		}
	}
	return sb, nil
}

// awaitOperators waits, behind the screen, for the cluster to be ready and
// reports it, then for the operators. A failure is shown on the screen's
// status line (the sandbox traced it, rlab.startup) and told to Failed,
// with where the logs are: the screen stays until the user quits.
func (l *Launcher) awaitOperators(ctx context.Context, sb *sandbox.Sandbox, r Report) {
	err := sb.WaitClusterReady(ctx)
	if err == nil && r.ClusterReady != nil {
		r.ClusterReady(sb)
	}
	if err == nil {
		err = sb.WaitOperators(ctx)
	}
	// A quit while starting (Stop) is no failure.
	if err != nil && ctx.Err() == nil && !errors.Is(err, sandbox.ErrStopped) && r.Failed != nil {
		r.Failed(&StartError{Err: err, Logs: l.Dir.Logs()})
	}
}

// ensureAssets finds the control plane, getting it (assets.Get) if it is missing, and
// reports that as a phase. On kind and an existing cluster only kubectl
// is needed (the shell operator's): the cluster is not rlab's to run.
func ensureAssets(ctx context.Context, b backend.Backend, r Report) (string, error) {
	t0 := time.Now()
	w := &countWriter{w: r.Build}
	names := assets.Binaries
	if !b.LocalControlPlane {
		names = []string{"kubectl"}
	}
	dir, err := assets.EnsureOnly(ctx, os.Getenv, w, names...)
	if f, ok := r.Build.(interface{ Flush() error }); ok {
		_ = f.Flush()
	}
	if err == nil && w.n > 0 && r.Phase != nil { // Ensure had to fetch or build: it said so
		r.Phase(cluster.Phase{Name: "control plane installed", Took: time.Since(t0)})
	}
	return dir, err
}

// Described is what Info reads of a cluster: a sandbox's Cluster part, or a
// backend.
type Described interface {
	Type() backend.Backend
	Version() string
	Detail() string
}

// Info is what the screen's header says of the running cluster, e.g.
// "envtest v1.36.3" or "kind v0.33.0 · Kubernetes v1.36.3 · node IMAGE".
func Info(b Described) tui.Info {
	version := b.Version()
	if d := b.Detail(); d != "" {
		version += " · " + d
	}
	return tui.Info{Backend: b.Type().Label(), Version: version}
}

// Source is the screen's view of the sandbox (Options.Screen), once started.
func (l *Launcher) Source() tui.Source {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.source == nil {
		return nil
	}
	return l.source
}

// Session is the lesson the screen follows (Options.Follow), or nil.
func (l *Launcher) Session() tui.Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.session
}

// serve takes rlab do's requests on the state dir's control socket until
// Stop. The sandbox runs without it if it cannot: Report.Note says why.
// Called with l.mu held.
func (l *Launcher) serve(sb *sandbox.Sandbox, r Report) {
	srv, err := control.Listen(l.Dir.Control(), actions.NewActor(sb), l.log)
	if err != nil {
		l.log.Error("rlab do will not work", "err", err)
		if r.Note != nil {
			r.Note("rlab do will not work: " + err.Error())
		}
		return
	}
	l.control = srv
}

// Stop stops rlab do's socket and the lesson session, then the sandbox. It is safe
// to call at any time and more than once; only the call that stops the
// sandbox returns its error.
func (l *Launcher) Stop() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.control != nil {
		// First: no action may start on a sandbox that is stopping.
		if err := l.control.Close(); err != nil {
			l.log.Warn("control socket", "err", err)
		}
		l.control = nil
	}
	// A reset under way ends (its Restore cancelled) before the session it
	// resets, and says so before the reporter's last word.
	for _, stop := range l.resetStops {
		stop()
	}
	l.resetStops = nil
	if l.sessionStop != nil {
		l.sessionStop()
		l.sessionStop = nil
	}
	if l.reporter != nil { // the instructor sees the student left
		l.reporter.Close()
		l.reporter = nil
	}
	if l.sb == nil || l.stopped {
		return nil
	}
	l.stopped = true
	if err := l.sb.Stop(); err != nil {
		return fmt.Errorf("stop sandbox: %w", err)
	}
	return nil
}

// Close stops what Stop has not, ends the recording and closes the log. It
// returns what went wrong stopping or recording; later calls return the same.
func (l *Launcher) Close() error {
	l.closeOnce.Do(func() {
		err := l.Stop()
		if l.recCancel != nil {
			l.recCancel()
			<-l.recDone
		}
		if l.recClose != nil {
			if cerr := l.recClose(); l.recErr == nil && cerr != nil {
				l.recErr = fmt.Errorf("record: %w", cerr)
			}
		}
		_ = l.logs.Close()
		l.closeErr = errors.Join(err, l.recErr)
	})
	return l.closeErr
}

// Names are the styles' names, for the packages that take strings.
func Names(ss []style.Style) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.String()
	}
	return out
}

// openLog sends rlab's own logs, and those of the libraries it uses (klog,
// controller-runtime), to a file in the state dir: never to the terminal.
func openLog(d state.Dir) (*slog.Logger, io.Closer, error) {
	if err := os.MkdirAll(d.Logs(), 0o700); err != nil {
		return nil, nil, fmt.Errorf("log dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(d.Logs(), "rlab.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("log file: %w", err)
	}
	h := slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})
	lr := logr.FromSlogHandler(h)
	klog.SetLogger(lr)
	ctrllog.SetLogger(lr)
	return slog.New(h), f, nil
}

// Assets is the local control plane's directory, built first if missing.
func Assets(ctx context.Context) (string, error) {
	return ensureAssets(ctx, backend.Envtest, Report{})
}
