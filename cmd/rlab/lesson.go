package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/tui"
)

func newLessonCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lesson",
		Short: "Step-by-step lessons that check themselves against the running operators",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newLessonListCmd(), newLessonStartCmd(), newLessonVerifyCmd())
	return cmd
}

func newLessonListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the lessons and how far you got in each",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := lessons.Load()
			if err != nil {
				return err
			}
			d, err := stateDir()
			if err != nil {
				return err
			}
			prog, err := lessons.LoadProgress(d)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, l := range all {
				fmt.Fprintf(tw, "%2d\t%s\t%d steps\t%s\n", l.Number, l.Title, len(l.Steps), prog.Where(l))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "\nrlab lesson start N begins (or resumes) lesson N.")
			return nil
		},
	}
}

type lessonFlags struct {
	All           bool
	ShellInterval time.Duration
	FromStart     bool
	Text          bool
}

func newLessonVerifyCmd() *cobra.Command {
	f := lessonFlags{}
	cmd := &cobra.Command{
		Use:   "verify [N...|--all]",
		Short: "Autoplay lessons headless against a fresh sandbox: every check must pass",
		Long: `Start a sandbox (all three styles and the sample Echo), play every step of
the chosen lessons as the student would, wait for each step's check, and
print the time of each step and lesson. Exits non-zero if any check fails.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			all, err := lessons.Load()
			if err != nil {
				return err
			}
			chosen, err := chooseLessons(all, args, f.All)
			if err != nil {
				return err
			}
			return verifyLessons(cmd.Context(), chosen, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&f.All, "all", false, "verify every lesson")
	cmd.Flags().DurationVar(&f.ShellInterval, "shell-interval", 5*time.Second, "poll interval of the shell loop")
	return cmd
}

func chooseLessons(all []*lessons.Lesson, args []string, every bool) ([]*lessons.Lesson, error) {
	switch {
	case every && len(args) > 0:
		return nil, errors.New("give lesson numbers or --all, not both")
	case every:
		return all, nil
	case len(args) == 0:
		return nil, errors.New("which lessons? give their numbers, or --all (see rlab lesson list)")
	}
	var out []*lessons.Lesson
	for _, a := range args {
		n, err := strconv.Atoi(a)
		if err != nil {
			return nil, fmt.Errorf("lesson %q: want a number (see rlab lesson list)", a)
		}
		l, err := lessons.Find(all, n)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// startLessonSandbox starts the sandbox every lesson expects: all styles and
// the sample Echo, in the user's state dir. stop stops it.
func startLessonSandbox(ctx context.Context, shellInterval time.Duration, stderr io.Writer) (sb *sandbox.Sandbox, d state.Dir, stop func(), err error) {
	d, log, closeLog, err := claimState(stderr)
	if err != nil {
		return nil, d, nil, err
	}
	dir, err := assets.Ensure(ctx, os.Getenv, stderr)
	if err != nil {
		closeLog.Close()
		return nil, d, nil, err
	}
	fmt.Fprintf(stderr, "starting sandbox (envtest %s, state in %s)\n", assets.KubeVersion, d.Root)
	sb, err = sandbox.Start(ctx, sandbox.Options{
		State: d, Assets: dir, Log: log,
		Styles: sandbox.Styles, ShellInterval: shellInterval, Sample: true,
	})
	if err != nil {
		closeLog.Close()
		var busy *state.BusyError
		if errors.As(err, &busy) {
			fmt.Fprintln(stderr, "rlab:", err)
			return nil, d, nil, exitCode(1)
		}
		return nil, d, nil, fmt.Errorf("start sandbox: %w (logs in %s)", err, d.Logs())
	}
	fmt.Fprintf(stderr, "sandbox ready in %.2fs\n", sb.Ready.Seconds())
	stop = func() {
		if err := sb.Stop(); err != nil {
			fmt.Fprintln(stderr, "rlab: stop sandbox:", err)
		}
		closeLog.Close()
	}
	return sb, d, stop, nil
}

func verifyLessons(parent context.Context, chosen []*lessons.Lesson, f lessonFlags, stdout, stderr io.Writer) error {
	ctx, cancel := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	sb, _, stop, err := startLessonSandbox(ctx, f.ShellInterval, stderr)
	if err != nil {
		return err
	}
	defer stop()
	p := lessons.NewPlayer(sb)
	defer p.Close()
	t0 := time.Now()
	results := p.Verify(ctx, chosen, stdout)
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
		}
	}
	fmt.Fprintf(stdout, "%d of %d lessons verified in %.1fs (shell loop polling every %s)\n",
		len(results)-failed, len(chosen), time.Since(t0).Seconds(), f.ShellInterval)
	if failed > 0 || len(results) < len(chosen) {
		return exitCode(1)
	}
	return nil
}

func newLessonStartCmd() *cobra.Command {
	f := lessonFlags{}
	up := &upFlags{}
	cmd := &cobra.Command{
		Use:   "start N",
		Short: "Follow lesson N on the screen, each step checked live",
		Long: `Start the sandbox and the screen with lesson N's panel: each step says what
to do (a kubectl command to type in another terminal after eval "$(rlab env)",
or a key on the screen) and checks live that it happened.
Keys: n next step · b back · a play the step for me · l the lesson list.
Progress is kept in the state dir: start N again to resume.
With --text the lesson runs on plain text instead of the screen: type n, b,
a (play) or q, then Enter.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			all, err := lessons.Load()
			if err != nil {
				return err
			}
			chosen, err := chooseLessons(all, args, false)
			if err != nil {
				return err
			}
			if f.Text {
				return startLesson(cmd.Context(), chosen[0], f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			l := chosen[0]
			up.ShellInterval = f.ShellInterval
			up.Title = fmt.Sprintf("lesson %d: %s", l.Number, l.Title)
			up.Guide = func(ctx context.Context, sb *sandbox.Sandbox, d state.Dir) (tui.Guide, func(), error) {
				prog, err := lessons.LoadProgress(d)
				if err != nil {
					return nil, nil, err
				}
				from := prog.Resume(l)
				if f.FromStart {
					from = 0
				}
				p := lessons.NewPlayer(sb)
				s := lessons.NewSession(ctx, p, all, l, from, prog, func(pr *lessons.Progress) error { return pr.Save(d) })
				return sessionGuide{s}, func() { s.Close(); p.Close() }, nil
			}
			return runUp(cmd.Context(), *up, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().DurationVar(&f.ShellInterval, "shell-interval", 5*time.Second, "poll interval of the shell loop")
	cmd.Flags().BoolVar(&f.FromStart, "from-start", false, "start at step 1 even if you got further before")
	cmd.Flags().BoolVar(&f.Text, "text", false, "plain text on stdin/stdout instead of the screen")
	cmd.Flags().StringVar(&up.Record, "record", "", "record the session to `FILE`, as rlab up --record does")
	return cmd
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

func startLesson(parent context.Context, l *lessons.Lesson, f lessonFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx, cancel := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	sb, d, stop, err := startLessonSandbox(ctx, f.ShellInterval, stderr)
	if err != nil {
		return err
	}
	defer stop()
	prog, err := lessons.LoadProgress(d)
	if err != nil {
		return err
	}
	from := prog.Resume(l)
	if f.FromStart {
		from = 0
	}
	fmt.Fprintln(stderr, "point your kubectl at it: eval \"$(rlab env)\"")
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	p := lessons.NewPlayer(sb)
	defer p.Close()
	err = p.Guide(ctx, l, from, lines, stdout, func(next int) {
		prog.Set(l, next, time.Now())
		if err := prog.Save(d); err != nil {
			fmt.Fprintln(stderr, "rlab:", err)
		}
	})
	switch {
	case errors.Is(err, lessons.ErrQuit):
		fmt.Fprintf(stdout, "progress kept: rlab lesson start %d resumes here\n", l.Number)
		return nil
	case ctx.Err() != nil:
		return nil // Ctrl-C: progress is saved
	}
	return err
}
