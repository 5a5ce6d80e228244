package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/style"
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
	clusterFlags
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
			_, chosen, err := chooseLessons(args, f.All)
			if err != nil {
				return err
			}
			return f.verify(cmd.Context(), chosen, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&f.All, "all", false, "verify every lesson")
	cmd.Flags().DurationVar(&f.ShellInterval, "shell-interval", 5*time.Second, "poll interval of the shell loop")
	f.clusterFlags.register(cmd.Flags())
	return cmd
}

// chooseLessons loads the course and picks the lessons args number, or all
// of them with every.
func chooseLessons(args []string, every bool) (all, chosen []*lessons.Lesson, err error) {
	switch {
	case every && len(args) > 0:
		return nil, nil, errors.New("give lesson numbers or --all, not both")
	case !every && len(args) == 0:
		return nil, nil, errors.New("which lessons? give their numbers, or --all (see rlab lesson list)")
	}
	if all, err = lessons.Load(); err != nil || every {
		return all, all, err
	}
	for _, a := range args {
		n, err := strconv.Atoi(a)
		if err != nil {
			return nil, nil, fmt.Errorf("lesson %q: want a number (see rlab lesson list)", a)
		}
		l, err := lessons.Find(all, n)
		if err != nil {
			return nil, nil, err
		}
		chosen = append(chosen, l)
	}
	return all, chosen, nil
}

// withLessonSandbox starts the sandbox every lesson expects (all styles and
// the sample Echo, in the user's state dir), runs fn with a lesson player on
// it until fn returns or a signal comes, and stops it.
func (f lessonFlags) withLessonSandbox(ctx context.Context, stderr io.Writer,
	fn func(ctx context.Context, d state.Dir, p *lessons.Player) error) error {
	opts := launch.Options{Styles: style.All(), ShellInterval: f.ShellInterval, Sample: true, Report: launch.Print(stderr)}
	if err := f.apply(&opts); err != nil {
		return err
	}
	ctx, cancel := interruptible(ctx)
	defer cancel()
	l, err := launch.New()
	if err != nil {
		return err
	}
	defer func() {
		if err := l.Close(); err != nil {
			fmt.Fprintln(stderr, "rlab:", err)
		}
	}()
	sb, err := l.Start(ctx, opts)
	if err != nil {
		return startErr(ctx, err)
	}
	fmt.Fprintf(stderr, "sandbox ready in %.2fs\n", sb.Ready.Seconds())
	p := lessons.NewPlayer(sb)
	defer p.Close()
	return fn(ctx, l.Dir, p)
}

// verify autoplays the chosen lessons on a new sandbox.
func (f lessonFlags) verify(ctx context.Context, chosen []*lessons.Lesson, stdout, stderr io.Writer) error {
	backend, err := sandbox.ParseBackend(f.Backend)
	if err != nil {
		return err
	}
	// A lesson this backend cannot hold is said so, not played: with
	// --all it is skipped, named on its own it is an error.
	var runs, skipped []*lessons.Lesson
	for _, l := range chosen {
		if l.RunsOn(backend) {
			runs = append(runs, l)
		} else {
			skipped = append(skipped, l)
		}
	}
	if !f.All && len(skipped) > 0 {
		return errors.New(skipped[0].NotOn(backend))
	}
	return f.withLessonSandbox(ctx, stderr, func(ctx context.Context, _ state.Dir, p *lessons.Player) error {
		for _, l := range skipped {
			fmt.Fprintf(stdout, "skip lesson %d %s: %s\n", l.Number, l.Slug, l.NotOn(backend))
		}
		chosen := runs
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
	})
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
			all, chosen, err := chooseLessons(args, false)
			if err != nil {
				return err
			}
			l := chosen[0]
			backend, err := sandbox.ParseBackend(f.Backend)
			if err != nil {
				return err
			}
			if why := l.NotOn(backend); why != "" {
				return errors.New(why)
			}
			if f.Text {
				return f.startText(cmd.Context(), l, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			up.ShellInterval, up.clusterFlags = f.ShellInterval, f.clusterFlags
			up.Title = fmt.Sprintf("lesson %d: %s", l.Number, l.Title)
			up.Follow = &launch.Follow{Lesson: l, Course: all, FromStart: f.FromStart}
			return up.run(cmd.Context(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().DurationVar(&f.ShellInterval, "shell-interval", 5*time.Second, "poll interval of the shell loop")
	cmd.Flags().BoolVar(&f.FromStart, "from-start", false, "start at step 1 even if you got further before")
	cmd.Flags().BoolVar(&f.Text, "text", false, "plain text on stdin/stdout instead of the screen")
	f.clusterFlags.register(cmd.Flags())
	up.operatorFlags.register(cmd.Flags())
	cmd.Flags().StringVar(&up.Record, "record", "", "record the session to `FILE`, as rlab up --record does")
	return cmd
}

// startText follows lesson l on plain text: the student's lines on stdin
// drive it, its steps and checks are written to stdout.
func (f lessonFlags) startText(ctx context.Context, l *lessons.Lesson, stdin io.Reader, stdout, stderr io.Writer) error {
	return f.withLessonSandbox(ctx, stderr, func(ctx context.Context, d state.Dir, p *lessons.Player) error {
		prog, from, err := launch.Resume(d, l, f.FromStart)
		if err != nil {
			return err
		}
		fmt.Fprintln(stderr, "point your kubectl at it: eval \"$(rlab env)\"")
		err = p.Guide(ctx, l, from, readLines(ctx, stdin), stdout, func(next int) {
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
	})
}

// readLines sends the lines of r until it ends or ctx does.
func readLines(ctx context.Context, r io.Reader) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return lines
}
