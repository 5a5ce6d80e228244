package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/fault"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/tui"
)

// screenActions are what the screen's keys do: the student's edits of the
// Echoes (traced as theirs), and rlab's own acts on the operators' leaders
// and proxies, each the little of a sandbox part the keys use.
type screenActions struct {
	echoEdits
	leaders
	proxyFaults
}

type (
	// echoEdits are the student's edits the keys make (sandbox.Student).
	echoEdits interface {
		SetReplicas(ctx context.Context, name string, n int) error
		SetMessage(ctx context.Context, name, msg string) error
		DeleteDeployment(ctx context.Context, st style.Style, name string) error
		ScaleDeployment(ctx context.Context, st style.Style, name string, n int) error
		DeleteEcho(ctx context.Context, name string) error
		CreateEcho(ctx context.Context, name, msg string, n int) error
	}
	// leaders are the keys' kills and stops (sandbox.Operators).
	leaders interface {
		KillLeader(ctx context.Context, st style.Style) (string, error)
		StopLeader(ctx context.Context, st style.Style) (string, error)
	}
	// proxyFaults are the fault prompt's (sandbox.Faults).
	proxyFaults interface {
		SetFault(st style.Style, f fault.Fault) error
		ClearFault(st style.Style, kind fault.Kind)
	}
)

// The screen acts on the sandbox through tui.Actions.
var _ tui.Actions = screenActions{}

// ApplyFault turns a fault on or off at a style's replicas, from the
// screen's fault prompt: the words of rlab do fault.
func (a screenActions) ApplyFault(_ context.Context, st style.Style, spec string) (string, error) {
	f, off, err := fault.ParseArg(spec)
	switch {
	case err != nil:
		return "", err
	case off && f.Kind == "":
		a.ClearFault(st, "")
		return "every fault off at " + st.Traits().Title, nil
	case off:
		a.ClearFault(st, f.Kind)
		return "the " + string(f.Kind) + " fault off at " + st.Traits().Title, nil
	}
	if err := a.SetFault(st, f); err != nil {
		return "", err
	}
	return "fault " + f.String() + " at " + st.Traits().Title + ": " + f.Describe(), nil
}

type upFlags struct {
	Record string
	Follow *launch.Follow // the lesson on the screen (rlab lesson start)
	Hint   string         // on the screen's status line when it has nothing else to say
	sandboxFlags
}

func (f *upFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Record, "record", "", "write every trace event and the world's changes to `FILE` (JSON lines, gzipped if it ends in .gz), for rlab replay")
	f.sandboxFlags.register(fs)
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
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd.Context(), cmd.ErrOrStderr()) },
	}
	f.register(cmd.Flags())
	return cmd
}

// run starts the sandbox behind the screen, which shows the start-up, and
// stops it however the screen ends.
func (f upFlags) run(ctx context.Context, stderr io.Writer) error {
	if err := f.validate(); err != nil {
		return err
	}
	opts := launch.Options{Options: sandbox.Options{Styles: style.All(), Sample: true}, Screen: true, Follow: f.Follow}
	if err := f.apply(&opts); err != nil {
		return err
	}
	if f.Follow != nil {
		if err := lessonOperator(f.Follow.Lesson, &opts); err != nil {
			return err
		}
	}
	l, closeAll, err := f.open()
	if err != nil {
		return err
	}
	defer closeAll()
	if f.Record != "" {
		if err := l.RecordTo(f.Record); err != nil {
			return fmt.Errorf("--record: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	app := f.newApp(l, opts, cancel)
	popts := []tea.ProgramOption{tea.WithFilter(tui.Filter), tea.WithFPS(30)}
	if os.Getenv("RLAB_SCREEN") != "bubbletea" { // Bubble Tea's renderer draws every frame whole: kept to compare
		screen := tui.NewScreen(os.Stdout)
		app.SetScreen(screen)
		// Bubble Tea's renderer has nothing to draw but the terminal's
		// modes: it need not wake 30 times a second.
		popts = append(popts, tea.WithOutput(screen.Output()), tea.WithFPS(5))
	}
	p := tea.NewProgram(app, popts...)
	started := make(chan struct{})
	go func() {
		defer close(started)
		p.Send(startOnScreen(ctx, l, p, opts))
	}()
	_, runErr := p.Run()
	cancel() // however the screen ended, nothing is left running
	<-started
	return f.result(app, runErr, l.Close(), stderr)
}

// newApp is the screen: the start-up view until the sandbox is ready.
func (f upFlags) newApp(l *launch.Launcher, o launch.Options, cancel func()) *tui.App {
	// A lesson's start-up is in its language (--lang or the locale); rlab
	// up has no language of its own, nor does its screen: English.
	var w lessonview.Words
	if f.Follow != nil {
		w = lessonview.WordsFor(f.Follow.Lesson.Lang)
	}
	title := w.F("starting the sandbox · %s · state in %s", o.Backend.Title(), l.Dir.Root)
	if f.Follow != nil {
		title = w.F("lesson %d: %s", f.Follow.Lesson.Number, f.Follow.Lesson.Title) + " · " + title
	}
	return tui.NewApp(tui.AppOptions{Title: title, Words: w, Cancel: cancel, Stop: l.Stop, Main: tui.Options{
		Info:   tui.Info{Backend: o.Backend.Title()}, // until ReadyMsg brings launch.Info
		Styles: o.AllStyles(), Echo: sandbox.SampleName, Start: l.Began, Dark: true, Hint: f.Hint,
	}})
}

// startOnScreen starts the sandbox, showing how it goes on the screen, and
// returns what the screen shows next: ReadyMsg or FailedMsg.
func startOnScreen(ctx context.Context, l *launch.Launcher, p *tea.Program, o launch.Options) tea.Msg {
	o.Report = launch.Show(p.Send)
	sb, err := l.Start(ctx, o)
	if se := (*launch.StartError)(nil); errors.As(err, &se) && ctx.Err() == nil {
		err = fmt.Errorf("start sandbox: %w\n\nEverything started was stopped. Logs are in %s", se.Err, se.Logs)
	}
	if err != nil {
		return tui.FailedMsg{Err: err}
	}
	info := launch.Info(sb.Cluster())
	return tui.ReadyMsg{Source: l.Source(), Actions: screenActions{sb.Student(), sb.Operators(), sb.Faults()}, Session: l.Session(), Info: &info}
}

// result says how the session ended, once: on stderr and in the exit
// status. closeErr is the Launcher's: stopping (if the screen did not) and
// recording.
func (f upFlags) result(app *tui.App, runErr, closeErr error, stderr io.Writer) error {
	if app.Interrupted() {
		return errInterrupted
	}
	if err := app.Err(); err != nil {
		return errors.New(strings.TrimSpace(err.Error()))
	}
	if runErr != nil && !errors.Is(runErr, tea.ErrInterrupted) {
		return fmt.Errorf("screen: %w", runErr)
	}
	if err, took := app.StopErr(); err != nil || closeErr != nil {
		return errors.Join(err, closeErr)
	} else if took > 0 {
		fmt.Fprintf(stderr, "rlab: sandbox stopped in %.2fs; nothing left running\n", took.Seconds())
	}
	if f.Record != "" {
		fmt.Fprintf(stderr, "rlab: recorded to %s; play it with `rlab replay %s`\n", f.Record, f.Record)
	}
	return nil
}
