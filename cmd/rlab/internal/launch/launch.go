// Package launch is the start-up sequence every rlab command that runs a
// sandbox shares: claim the state dir, find (or build) the control plane,
// make the trace bus, start the sandbox, then the recorder and the lesson
// guide; and the shutdown in the reverse order. The commands (up, run,
// lesson) are flags over it, as kind's commands are flags over its cluster
// provider.
package launch

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/tui"
	"github.com/kkloud/rlab/tui/replay"
)

// Backend is the kind of cluster a Launcher starts.
const Backend = "envtest"

// Options say what to start and who is told how it goes.
type Options struct {
	// Styles are the operator styles to run (none: only the cluster).
	Styles        []style.Style
	ShellInterval time.Duration
	// Sample creates Echo "hello" in every style and waits until it is ready.
	Sample bool
	Report Report
	// Screen makes Source, the screen's view of the sandbox.
	Screen bool
	// Follow, if set, is the lesson the screen follows: Start makes Guide.
	Follow *Follow
}

// Follow is a lesson followed on the screen.
type Follow struct {
	Lesson    *lessons.Lesson
	Course    []*lessons.Lesson // every lesson, for the screen's list
	FromStart bool              // at step 1, not where the student got to
}

// Report is told how start-up goes; a nil field is not told. Print reports
// on a terminal, Show on the screen.
type Report struct {
	// Build receives a control-plane build's output, when one is needed. If
	// it has a Flush method, that is called once the build ends.
	Build io.Writer
	// Starting is told the state dir just before the sandbox starts.
	Starting func(state.Dir)
	// Phase is told each start-up phase as it ends, "control plane built"
	// first if the binaries had to be built.
	Phase func(cluster.Phase)
	// Note is told what is worth saying: processes a previous run left.
	Note func(string)
}

// Print reports start-up as the headless commands do: on w, line by line.
func Print(w io.Writer) Report {
	return Report{
		Build: w,
		Starting: func(d state.Dir) {
			fmt.Fprintf(w, "starting sandbox (%s %s, state in %s)\n", Backend, assets.KubeVersion, d.Root)
		},
		Note: func(s string) { fmt.Fprintln(w, s) },
	}
}

// Show reports start-up on the screen, through send (tea.Program.Send).
func Show(send func(tea.Msg)) Report {
	return Report{
		Build: &lineWriter{send: func(s string) { send(tui.BuildLineMsg(s)) }},
		Phase: func(ph cluster.Phase) { send(tui.PhaseMsg{Name: ph.Name, Took: ph.Took}) },
		Note:  func(s string) { send(tui.NoteMsg(s)) },
	}
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

	mu        sync.Mutex
	sb        *sandbox.Sandbox
	stopped   bool
	source    *sandboxSource
	guide     tui.Guide
	guideStop func()

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
// recorder and the guide, and returns the sandbox. An error from the
// sandbox itself is a *StartError, or a *state.BusyError if another rlab
// claimed the state dir first. Close stops whatever was started.
func (l *Launcher) Start(ctx context.Context, o Options) (*sandbox.Sandbox, error) {
	dir, err := ensureAssets(ctx, o.Report)
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
	if o.Report.Starting != nil {
		o.Report.Starting(l.Dir)
	}
	sb, err := sandbox.Start(ctx, sandbox.Options{
		State: l.Dir, Assets: dir, Log: l.log, Bus: l.Bus, Progress: o.Report.Phase,
		Styles: Names(o.Styles), ShellInterval: o.ShellInterval, Sample: o.Sample,
	})
	if err != nil {
		if busy := (*state.BusyError)(nil); errors.As(err, &busy) {
			return nil, err
		}
		return nil, &StartError{Err: err, Logs: l.Dir.Logs()}
	}
	for _, e := range sb.Reaped {
		if o.Report.Note != nil {
			o.Report.Note(fmt.Sprintf("cleaned up %s (pid %d) left by a previous run", e.Name, e.PID))
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sb = sb
	if o.Screen || l.recTo != nil {
		l.source = newSandboxSource(ctx, sb, screen)
	}
	if l.recTo != nil {
		l.record(recSub, o.Styles)
	}
	if o.Follow != nil {
		return sb, l.follow(ctx, o.Follow)
	}
	return sb, nil
}

// ensureAssets finds the control plane, building it if it is missing, and
// reports the build as a phase.
func ensureAssets(ctx context.Context, r Report) (string, error) {
	t0 := time.Now()
	w := &countWriter{w: r.Build}
	dir, err := assets.Ensure(ctx, os.Getenv, w)
	if f, ok := r.Build.(interface{ Flush() error }); ok {
		_ = f.Flush()
	}
	if err == nil && w.n > 0 && r.Phase != nil { // Ensure had to build: it said so
		r.Phase(cluster.Phase{Name: "control plane built", Took: time.Since(t0)})
	}
	return dir, err
}

// RecordTo makes Start record the session to the file path (gzipped if
// it ends in .gz), for rlab replay: every trace event from before the
// sandbox starts, and the world's changes, until Close.
func (l *Launcher) RecordTo(path string) error {
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	l.recTo, l.recClose = fh, fh.Close
	if strings.HasSuffix(path, ".gz") {
		zw := gzip.NewWriter(fh)
		l.recTo, l.recClose = zw, func() error { return errors.Join(zw.Close(), fh.Close()) }
	}
	return nil
}

// record writes the session to RecordTo's file until Close.
func (l *Launcher) record(sub *bus.Sub, styles []style.Style) {
	rec, err := replay.NewRecorder(l.recTo, replay.Header{Backend: Backend, Version: assets.KubeVersion,
		Start: l.Began, Styles: Names(styles), Echo: sandbox.SampleName})
	if err != nil {
		l.recErr = err
		return
	}
	ctx, cancel := context.WithCancel(context.Background()) // until Close, past the caller's ctx
	l.recCancel, l.recDone = cancel, make(chan struct{})
	go func() {
		defer close(l.recDone)
		l.recErr = rec.Run(ctx, replay.Live{Sub: sub, Snapshot: l.source.Snapshot, Version: l.source.Version})
	}()
}

// follow makes the Guide of a lesson, resuming where the student got to.
func (l *Launcher) follow(ctx context.Context, f *Follow) error {
	prog, from, err := Resume(l.Dir, f.Lesson, f.FromStart)
	if err != nil {
		return err
	}
	p := lessons.NewPlayer(l.sb)
	s := lessons.NewSession(ctx, p, f.Course, f.Lesson, from, prog, func(pr *lessons.Progress) error { return pr.Save(l.Dir) })
	l.guide, l.guideStop = sessionGuide{s}, func() { s.Close(); p.Close() }
	return nil
}

// sessionGuide is a lessons.Session as the screen's Guide: the state types
// have the same fields, so they convert.
type sessionGuide struct{ *lessons.Session }

func (g sessionGuide) State() tui.GuideState { return tui.GuideState(g.Session.State()) }

func (g sessionGuide) Lessons() []tui.GuideEntry {
	es := g.Session.Lessons()
	out := make([]tui.GuideEntry, len(es))
	for i, e := range es {
		out[i] = tui.GuideEntry(e)
	}
	return out
}

// Resume loads the student's progress and the step lesson l resumes at:
// where they got to, or the first with fromStart.
func Resume(d state.Dir, l *lessons.Lesson, fromStart bool) (*lessons.Progress, int, error) {
	prog, err := lessons.LoadProgress(d)
	if err != nil {
		return nil, 0, err
	}
	if fromStart {
		return prog, 0, nil
	}
	return prog, prog.Resume(l), nil
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

// Guide is the lesson the screen follows (Options.Follow), or nil.
func (l *Launcher) Guide() tui.Guide {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.guide
}

// Stop stops the guide, then the sandbox. It is safe to call at any time and
// more than once; only the call that stops the sandbox returns its error.
func (l *Launcher) Stop() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.guideStop != nil {
		l.guideStop()
		l.guideStop = nil
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

// countWriter counts what is written through it to w (nil: discarded).
type countWriter struct {
	w io.Writer
	n int
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += len(p)
	if c.w == nil {
		return len(p), nil
	}
	return c.w.Write(p)
}
