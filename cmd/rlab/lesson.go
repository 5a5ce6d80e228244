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
				lp := prog.Of(l)
				where := ""
				switch {
				case lp.Done:
					where = "done"
				case lp.Step > 0:
					where = fmt.Sprintf("at step %d of %d", lp.Step+1, len(l.Steps))
				}
				fmt.Fprintf(tw, "%2d\t%s\t%d steps\t%s\n", l.Number, l.Title, len(l.Steps), where)
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
	cmd := &cobra.Command{
		Use:   "start N",
		Short: "Walk through lesson N on a fresh sandbox, checking each step live",
		Long: `Start a sandbox and walk through lesson N step by step: each step says what
to do (a kubectl command to type in another terminal after eval "$(rlab env)",
or a key on the screen) and waits until the sandbox shows it happened.
Type n (next), b (back), p (play the step for me) or q (quit), then Enter.
Progress is kept in the state dir: start N again to resume.`,
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
			return startLesson(cmd.Context(), chosen[0], f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().DurationVar(&f.ShellInterval, "shell-interval", 5*time.Second, "poll interval of the shell loop")
	cmd.Flags().BoolVar(&f.FromStart, "from-start", false, "start at step 1 even if you got further before")
	return cmd
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
	from := prog.Of(l).Step
	if f.FromStart || prog.Of(l).Done {
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
