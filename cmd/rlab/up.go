package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui"
	"github.com/kkloud/rlab/tui/replay"
)

// The screen acts on the sandbox through tui.Actions.
var _ tui.Actions = (*sandbox.Sandbox)(nil)

type upFlags struct {
	Record        string
	ShellInterval time.Duration
	CPUProfile    string // rlab's own CPU profile, to find what an idle screen costs
	// Guide, if set, makes the lesson panel's Guide once the sandbox is
	// up (`rlab lesson start`); stop is called before the sandbox stops.
	Guide func(ctx context.Context, sb *sandbox.Sandbox, d state.Dir) (g tui.Guide, stop func(), err error)
	Title string // of the start-up view, if not the default
}

func (f *upFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Record, "record", "", "write every trace event and the world's changes to `FILE` (JSON lines, gzipped if it ends in .gz), for rlab replay")
	fs.DurationVar(&f.ShellInterval, "shell-interval", 5*time.Second, "poll interval of the shell loop")
	fs.StringVar(&f.CPUProfile, "cpuprofile", "", "write rlab's CPU profile to `FILE` (go tool pprof)")
	_ = fs.MarkHidden("cpuprofile")
}

func newUpCmd() *cobra.Command {
	f := &upFlags{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the sandbox and the screen (the default command)",
		Long: `Start the sandbox (control plane, the three operators, Echo "hello") and open
the screen: one pane per operator style, the timeline, and keys to edit the Echo,
break things on purpose and kill leaders. q stops the sandbox and leaves nothing
running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUp(cmd.Context(), *f, cmd.ErrOrStderr())
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// lineWriter sends each complete line written to it.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	send  func(string)
	lines int
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexAny(w.buf, "\r\n")
		if i < 0 {
			break
		}
		if i > 0 {
			w.lines++
			w.send(string(w.buf[:i]))
		}
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.send(string(w.buf))
		w.buf = nil
	}
	return nil
}

// sandboxSource is the screen's view of a running sandbox.
type sandboxSource struct {
	sb  *sandbox.Sandbox
	sub *bus.Sub
	ver atomic.Uint64
}

// newSandboxSource counts the world's changes until ctx ends or the world
// stops: World.Changed has room for one consumer, and the screen and the
// recorder both want to know.
func newSandboxSource(ctx context.Context, sb *sandbox.Sandbox, sub *bus.Sub) *sandboxSource {
	s := &sandboxSource{sb: sb, sub: sub}
	s.ver.Store(1)
	if w := sb.World(); w != nil {
		go func() {
			for {
				select {
				case <-w.Changed():
					s.ver.Add(1)
				case <-w.Done():
					return
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return s
}

func (s *sandboxSource) Sub() *bus.Sub   { return s.sub }
func (s *sandboxSource) Version() uint64 { return s.ver.Load() }

func (s *sandboxSource) Snapshot() world.Snapshot {
	if w := s.sb.World(); w != nil {
		return w.Snapshot()
	}
	return world.Snapshot{}
}

func runUp(parent context.Context, f upFlags, stderr io.Writer) error {
	if parent == nil {
		parent = context.Background()
	}
	d, log, closeLog, err := claimState(stderr)
	if err != nil {
		return err
	}
	defer closeLog.Close()
	if f.CPUProfile != "" {
		pf, err := os.Create(f.CPUProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	var recFile io.Writer
	if f.Record != "" {
		fh, err := os.OpenFile(f.Record, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("--record: %w", err)
		}
		defer fh.Close()
		recFile = fh
		if strings.HasSuffix(f.Record, ".gz") {
			zw := gzip.NewWriter(fh)
			defer zw.Close() // after the recorder's last flush (deferred later, run earlier)
			recFile = zw
		}
	}

	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	began := time.Now()
	info := tui.Info{Backend: "envtest", Version: assets.KubeVersion}

	var (
		mu      sync.Mutex
		sb      *sandbox.Sandbox
		stopped bool
	)
	stop := func() error {
		mu.Lock()
		defer mu.Unlock()
		if sb == nil || stopped {
			return nil
		}
		stopped = true
		return sb.Stop()
	}
	title := fmt.Sprintf("starting the sandbox · envtest %s · state in %s", assets.KubeVersion, d.Root)
	if f.Title != "" {
		title = f.Title + " · " + title
	}
	app := tui.NewApp(tui.AppOptions{
		Title: title,
		Main: tui.Options{
			Info:   info,
			Styles: sandbox.Styles,
			Echo:   sandbox.SampleName,
			Start:  began,
			Dark:   true,
		},
		Cancel: cancel,
		Stop:   stop,
	})
	p := tea.NewProgram(app, tea.WithFilter(tui.Filter), tea.WithFPS(30))

	var (
		wg        sync.WaitGroup
		recErr    error
		recCancel = func() {}
		guideStop = func() {}
	)
	started := make(chan struct{})
	go func() {
		defer close(started)
		bw := &lineWriter{send: func(l string) { p.Send(tui.BuildLineMsg(l)) }}
		t0 := time.Now()
		dir, err := assets.Ensure(ctx, os.Getenv, bw)
		_ = bw.Close()
		if err != nil {
			p.Send(tui.FailedMsg{Err: err})
			return
		}
		if bw.lines > 0 { // Ensure had to build: it said so and streamed the build
			p.Send(tui.PhaseMsg{Name: "control plane built", Took: time.Since(t0)})
		}
		b := bus.New()
		screen := b.Subscribe(tui.SubSize)
		var recSub *bus.Sub
		if recFile != nil {
			recSub = b.Subscribe(1 << 16)
		}
		s, err := sandbox.Start(ctx, sandbox.Options{
			State:         d,
			Assets:        dir,
			Log:           log,
			Styles:        sandbox.Styles,
			ShellInterval: f.ShellInterval,
			Sample:        true,
			Bus:           b,
			Progress:      func(ph cluster.Phase) { p.Send(tui.PhaseMsg{Name: ph.Name, Took: ph.Took}) },
		})
		if err != nil {
			var busy *state.BusyError
			if !errors.As(err, &busy) && ctx.Err() == nil {
				err = fmt.Errorf("start sandbox: %w\n\nEverything started was stopped. Logs are in %s", err, d.Logs())
			}
			p.Send(tui.FailedMsg{Err: err})
			return
		}
		mu.Lock()
		sb = s
		mu.Unlock()
		for _, e := range s.Reaped {
			p.Send(tui.NoteMsg(fmt.Sprintf("cleaned up %s (pid %d) left by a previous run", e.Name, e.PID)))
		}
		src := newSandboxSource(ctx, s, screen)
		if recSub != nil {
			rctx, rcancel := context.WithCancel(context.Background())
			recCancel = rcancel
			rec, err := replay.NewRecorder(recFile, replay.Header{Backend: info.Backend, Version: info.Version,
				Start: began, Styles: sandbox.Styles, Echo: sandbox.SampleName})
			if err == nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					recErr = rec.Run(rctx, replay.Live{Sub: recSub, Snapshot: src.Snapshot, Version: src.Version})
				}()
			} else {
				recErr = err
			}
		}
		var guide tui.Guide
		if f.Guide != nil {
			g, gstop, err := f.Guide(ctx, s, d)
			if err != nil {
				p.Send(tui.FailedMsg{Err: err})
				return
			}
			guide, guideStop = g, gstop
		}
		p.Send(tui.ReadyMsg{Source: src, Actions: s, Guide: guide})
	}()

	_, runErr := p.Run()
	// However the screen ended, nothing is left running.
	cancel()
	<-started
	guideStop()
	stopErr := stop()
	recCancel()
	wg.Wait()

	if app.Interrupted() {
		fmt.Fprintln(stderr, "rlab: interrupted during start-up; everything started was stopped")
		return exitCode(130)
	}
	if err := app.Err(); err != nil {
		fmt.Fprintln(stderr, "rlab:", strings.TrimSpace(err.Error()))
		return exitCode(1)
	}
	if runErr != nil && !errors.Is(runErr, tea.ErrInterrupted) {
		return fmt.Errorf("screen: %w", runErr)
	}
	if err, took := app.StopErr(); err != nil || stopErr != nil {
		return fmt.Errorf("stop sandbox: %w", errors.Join(err, stopErr))
	} else if took > 0 {
		fmt.Fprintf(stderr, "rlab: sandbox stopped in %.2fs; nothing left running\n", took.Seconds())
	}
	if recErr != nil {
		return recErr
	}
	if recFile != nil {
		fmt.Fprintf(stderr, "rlab: recorded to %s; play it with `rlab replay %s`\n", f.Record, f.Record)
	}
	return nil
}
