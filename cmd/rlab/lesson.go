package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/sandbox"
)

func newLessonCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lesson",
		Short: "Step-by-step lessons that check themselves against the running operators",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newLessonListCmd(), newLessonShowCmd(), newLessonExportCmd(), newLessonStartCmd(), newLessonVerifyCmd(), newLessonStarterCmd())
	return cmd
}

func newLessonStarterCmd() *cobra.Command {
	var (
		out  string
		step int
	)
	cmd := &cobra.Command{
		Use:   "starter N",
		Short: "Print the operator a lesson has you write, to start from (lesson 12)",
		Long: `Print the starter operator of lesson N, a bash script, for you to improve;
with -o write it to FILE (executable), never over a file that exists. Then
run the lesson with it: rlab lesson start N --operator NAME=./FILE.
Lesson 20's starter is a Go project: -o DIR writes its folder (never over one
that exists); run it from there with --operator NAME='go run ./cmd'.
With --step K print instead the operator as step K leaves it when you let
autoplay (a) make its fix: the lesson's own version, to compare with yours.`,
		Example: `  rlab lesson starter 12 -o my-operator.sh
  rlab lesson start 12 --operator mine=./my-operator.sh
  rlab lesson starter 12 --step 3 | diff my-operator.sh -
  rlab lesson starter 20 -o echo-go && cd echo-go
  rlab lesson start 20 --operator mine='go run ./cmd'
  rlab lesson starter 20 --step 6 -o ../step6 && diff -r . ../step6`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStarterStep(step); err != nil {
				return err
			}
			_, chosen, err := chooseLessons(args, false, langFlag{Lang: lessons.English})
			if err != nil {
				return err
			}
			l := chosen[0]
			if l.Operator == nil {
				return fmt.Errorf("lesson %d has no operator for you to write; %s", l.Number, operatorLessons())
			}
			// With no --step, the starter: a lesson whose first step swaps in
			// a version (22, 23) must not hand its student that step done.
			f := l.Operator.Starter
			if step > 0 {
				var err error
				if f, err = l.Version(step - 1); err != nil {
					return fmt.Errorf("--step %d: %w", step, err)
				}
			}
			if f.IsProject() {
				return writeStarterProject(cmd.ErrOrStderr(), l, f, out)
			}
			if out == "" {
				_, err := cmd.OutOrStdout().Write(f.Data)
				return err
			}
			// O_EXCL: the student's own version is never overwritten.
			w, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s exists already: it may be your work; remove it or name another file", out)
			}
			if err != nil {
				return err
			}
			if _, err := w.Write(f.Data); err != nil {
				w.Close()
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s; run it with: rlab lesson start %d --operator %s=%s\n",
				out, l.Number, l.Operator.Name, runnable(out))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write it to `FILE` (made executable) instead of stdout")
	cmd.Flags().IntVar(&step, "step", 0, "print the operator as step `K` leaves it (with the lesson's fixes) instead of the starter")
	return cmd
}

// writeStarterProject writes lesson l's Go project f to folder dir, which
// must not exist: the student's own version is never overwritten.
func writeStarterProject(stderr io.Writer, l *lessons.Lesson, f lessons.File, dir string) error {
	if dir == "" {
		return fmt.Errorf("lesson %d's operator is a Go project, a folder of files: give -o DIR to write it", l.Number)
	}
	if err := os.Mkdir(dir, 0o755); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists already: it may be your work; remove it or name another folder", dir)
	} else if err != nil {
		return err
	}
	if err := sandbox.WriteProject(dir, f.Files); err != nil {
		_ = os.RemoveAll(dir) // made just now, above: nothing of the student's
		return fmt.Errorf("write %s: %w", dir, err)
	}
	// A lesson that does not run on the default backend names one it runs on.
	flags := ""
	if !l.RunsOn(backend.Default.Name) && len(l.Backends) > 0 {
		flags = " --backend " + l.Backends[0]
	}
	fmt.Fprintf(stderr, "wrote the Go module %s; run it with: cd %s && rlab lesson start %d%s --operator %s='go run ./cmd'\n",
		dir, dir, l.Number, flags, l.Operator.Name)
	return nil
}

// runnable is path as a command /bin/sh runs: ./my-operator.sh, not a
// command looked up on PATH.
func runnable(path string) string {
	if strings.Contains(path, "/") {
		return path
	}
	return "./" + path
}

// operatorLessons names the lessons that have an operator of the student's.
func operatorLessons() string {
	all, err := lessons.Load()
	if err != nil {
		return err.Error()
	}
	var ns []string
	for _, l := range all {
		if l.Operator != nil {
			ns = append(ns, strconv.Itoa(l.Number))
		}
	}
	return "lessons with one: " + strings.Join(ns, ", ")
}

// lessonOperator adds to o the student's operator that lesson l grades:
// the one the student named NAME with --operator, or else the lesson's
// starter under that name. The sandbox then does not wait for the sample
// in that operator's namespace: the starter never reports it ready, and a
// lesson waits for its own baseline.
func lessonOperator(l *lessons.Lesson, o *launch.Options) error {
	if l == nil || l.Operator == nil {
		return nil
	}
	want := l.Operator.Name
	if slices.ContainsFunc(o.Custom, func(c sandbox.Custom) bool { return c.Name == want }) {
		o.NoWait = true
		return nil
	}
	if len(o.Custom) > 0 {
		return fmt.Errorf("lesson %d grades the operator named %s: start it as --operator %s=COMMAND, e.g. --operator %s=./my-operator.sh",
			l.Number, want, want, want)
	}
	o.Custom = append(o.Custom, sandbox.Custom{Name: want, Script: l.Operator.Starter.Data, Project: l.Operator.Starter.Files})
	o.NoWait = true
	return nil
}

func newLessonListCmd() *cobra.Command {
	var lang langFlag
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the lessons, how far you got in each, and how (steps by hand, played with a, skipped with n)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := lang.load()
			if err != nil {
				return err
			}
			d, err := stateDir()
			if err != nil {
				return err
			}
			prog, err := runner.LoadProgress(d)
			if err != nil {
				return err
			}
			var w lessonview.Words
			if len(all) > 0 {
				w = lessonview.WordsFor(all[0].Lang)
			}
			var rows [][]string
			for _, l := range all {
				after := ""
				if len(l.Requires) > 0 {
					after = w.F("after %s", l.RequiresList())
				}
				on := "" // runs on every backend
				if len(l.Backends) > 0 {
					names := make([]string, len(l.Backends))
					for i, b := range l.Backends {
						names[i] = b
					}
					on = w.F("%s only", strings.Join(names, ", "))
				}
				rows = append(rows, []string{fmt.Sprintf("%2d", l.Number), l.Title, w.F("%d steps", len(l.Steps)),
					w.F("~%d min", l.Minutes), after, on, prog.Listed(l)})
			}
			writeColumns(cmd.OutOrStdout(), rows)
			fmt.Fprintln(cmd.OutOrStdout(), "\n"+w.T("rlab lesson start N begins (or resumes) lesson N; rlab lesson show N prints it."))
			return nil
		},
	}
	lang.register(cmd.Flags())
	return cmd
}

type lessonFlags struct {
	All           bool
	ByHand        bool
	Read          time.Duration
	ShellInterval time.Duration
	FromStart     bool
	Reset         bool
	Text          bool
	clusterFlags
	langFlag
}

// langFlag is --lang: the course's language, else the locale's.
type langFlag struct{ Lang string }

func (f *langFlag) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Lang, "lang", "", "the course's `LANGUAGE`: "+strings.Join(lessons.Languages, ", ")+" (default: from LC_ALL, LC_MESSAGES or LANG; English if none of these)")
}

// lang is the language asked for, or the locale's.
func (f langFlag) lang() (string, error) {
	if f.Lang != "" {
		return f.Lang, lessons.CheckLang(f.Lang)
	}
	return lessons.LangOf(cmp.Or(os.Getenv("LC_ALL"), os.Getenv("LC_MESSAGES"), os.Getenv("LANG"))), nil
}

// load is the course in the language.
func (f langFlag) load() ([]*lessons.Lesson, error) {
	lang, err := f.lang()
	if err != nil {
		return nil, err
	}
	return lessons.LoadLang(lang)
}

func newLessonVerifyCmd() *cobra.Command {
	f := lessonFlags{}
	cmd := &cobra.Command{
		Use:   "verify [N...|--all]",
		Short: "Autoplay lessons headless against a fresh sandbox (or follow them by hand): every check must pass",
		Long: `Start a sandbox (all three styles and the sample Echo), play every step of
the chosen lessons (autoplay, the a key), wait for each step's check, and
print the time of each step and lesson. Exits non-zero if any check fails.
With --by-hand, do each step as a student does instead, on the session the
screen's lesson panel runs: read it for --read, during which a step that
needs an act must not pass, then run the command it shows through bash
(KUBECONFIG as rlab env says, rlab's kubectl and rlab first on PATH), or
press the key it names, and wait for its check, measured from the act.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			_, chosen, err := chooseLessons(args, f.All, f.langFlag)
			if err != nil {
				return err
			}
			return f.verify(cmd.Context(), chosen, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&f.All, "all", false, "verify every lesson")
	cmd.Flags().BoolVar(&f.ByHand, "by-hand", false, "follow each step as a student does: read it (--read), then run its command through bash with rlab env's KUBECONFIG; a step that needs an act must not pass before it")
	cmd.Flags().DurationVar(&f.Read, "read", 10*time.Second, "with --by-hand, how long the student reads a step before acting (0: act at once)")
	cmd.Flags().DurationVar(&f.ShellInterval, "shell-interval", 5*time.Second, "poll interval of the shell loop")
	f.clusterFlags.register(cmd.Flags())
	f.langFlag.register(cmd.Flags())
	return cmd
}

// chooseLessons loads the course and picks the lessons args number, or all
// of them with every.
func chooseLessons(args []string, every bool, lang langFlag) (all, chosen []*lessons.Lesson, err error) {
	switch {
	case every && len(args) > 0:
		return nil, nil, errors.New("give lesson numbers or --all, not both")
	case !every && len(args) == 0:
		return nil, nil, errors.New("which lessons? give their numbers, or --all (see rlab lesson list)")
	}
	if all, err = lang.load(); err != nil || every {
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
// the sample Echo, in the user's state dir), with what setup adds (the
// student's operator), runs fn with a lesson player on it until fn returns
// or a signal comes, and stops it.
func (f lessonFlags) withLessonSandbox(ctx context.Context, stderr io.Writer, setup func(*launch.Options) error,
	fn func(ctx context.Context, l *launch.Launcher, p *runner.Player) error) error {
	opts := launch.Options{Options: sandbox.Options{Styles: style.All(), ShellInterval: f.ShellInterval, Sample: true}, Report: launch.Print(stderr)}
	if err := f.apply(&opts); err != nil {
		return err
	}
	if err := setup(&opts); err != nil {
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
	p := runner.NewPlayer(sb)
	defer p.Close()
	return fn(ctx, l, p)
}

// verify autoplays the chosen lessons on a new sandbox.
func (f lessonFlags) verify(ctx context.Context, chosen []*lessons.Lesson, stdout, stderr io.Writer) error {
	on, err := backend.Parse(f.Backend)
	if err != nil {
		return err
	}
	// A lesson this backend cannot hold is said so, not played: with
	// --all it is skipped, named on its own it is an error.
	var runs, skipped []*lessons.Lesson
	for _, l := range chosen {
		if l.RunsOn(on.Name) {
			runs = append(runs, l)
		} else {
			skipped = append(skipped, l)
		}
	}
	if !f.All && len(skipped) > 0 {
		return errors.New(skipped[0].NotOn(on.Name))
	}
	for _, l := range skipped {
		fmt.Fprintf(stdout, "skip lesson %d %s: %s\n", l.Number, l.Slug, l.NotOn(on.Name))
	}
	// A lesson with an operator of the student's gets a sandbox of its own
	// that runs it: the other lessons act on every style's namespace, and
	// must not act on (or wait for) that operator too.
	t0 := time.Now()
	var results []runner.LessonResult
	for _, group := range sandboxGroups(runs) {
		interrupted := false
		err := f.withLessonSandbox(ctx, stderr, func(o *launch.Options) error { return lessonOperator(group[0], o) },
			func(ctx context.Context, l *launch.Launcher, p *runner.Player) error {
				d := l.Dir
				var hand *runner.Hand
				if f.ByHand {
					self, err := os.Executable()
					if err != nil {
						return fmt.Errorf("--by-hand runs rlab do as the student would: %w", err)
					}
					env, err := p.HandEnv(self, filepath.Join(d.Run(), "student-bin"))
					if err != nil {
						return err
					}
					hand = &runner.Hand{Read: f.Read, Env: env}
				}
				results = append(results, p.Verify(ctx, group, hand, stdout)...)
				interrupted = ctx.Err() != nil
				return nil
			})
		if err != nil {
			return err
		}
		if interrupted {
			break
		}
	}
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
		}
	}
	how := "autoplayed"
	if f.ByHand {
		how = fmt.Sprintf("by hand, %s of reading a step", f.Read)
	}
	fmt.Fprintf(stdout, "%d of %d lessons verified in %.1fs (%s; shell loop polling every %s)\n",
		len(results)-failed, len(runs), time.Since(t0).Seconds(), how, f.ShellInterval)
	if failed > 0 || len(results) < len(runs) {
		return exitCode(1)
	}
	return nil
}

// sandboxGroups splits lessons, in order, into runs that share a sandbox:
// the lessons in a row that need no operator of the student's, or the same.
func sandboxGroups(ls []*lessons.Lesson) [][]*lessons.Lesson {
	key := func(l *lessons.Lesson) string {
		if l.Operator == nil {
			return ""
		}
		return fmt.Sprintf("%s %d", l.Operator.Name, l.Number) // each its own starter
	}
	var out [][]*lessons.Lesson
	for i, l := range ls {
		if i > 0 && key(l) == key(ls[i-1]) {
			out[len(out)-1] = append(out[len(out)-1], l)
			continue
		}
		out = append(out, []*lessons.Lesson{l})
	}
	return out
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
Progress is kept in the state dir: start N again to resume; --reset starts
it again from step 1, the sandbox brought back to where the lesson starts.
With --text the lesson runs on plain text instead of the screen: type n, b,
a (play), r (start again from a clean sandbox; r N: lesson N) or q, then
Enter.
A lesson about your own operator (12) runs the one you name with
--operator NAME=COMMAND (see rlab lesson starter), or else its starter.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := firstErr(f.validate(), up.operatorFlags.validate()); err != nil {
				return err
			}
			all, chosen, err := chooseLessons(args, false, f.langFlag)
			if err != nil {
				return err
			}
			l := chosen[0]
			on, err := backend.Parse(f.Backend)
			if err != nil {
				return err
			}
			if why := l.NotOn(on.Name); why != "" {
				return errors.New(why)
			}
			up.Hint = warnPath(cmd.ErrOrStderr())
			if f.Text {
				setup := func(o *launch.Options) error {
					if err := up.operatorFlags.apply(o); err != nil {
						return err
					}
					return lessonOperator(l, o)
				}
				return f.startText(cmd.Context(), all, l, setup, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			up.ShellInterval, up.clusterFlags = f.ShellInterval, f.clusterFlags
			up.Follow = &launch.Follow{Lesson: l, Course: all, FromStart: f.FromStart, Reset: f.Reset}
			return up.run(cmd.Context(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().DurationVar(&f.ShellInterval, "shell-interval", 5*time.Second, "poll interval of the shell loop")
	cmd.Flags().BoolVar(&f.FromStart, "from-start", false, "start at step 1 even if you got further before")
	cmd.Flags().BoolVar(&f.Reset, "reset", false, "start at step 1 as a new attempt, the sandbox brought back to where the lesson starts (what a classroom's namespaces kept is removed)")
	cmd.Flags().BoolVar(&f.Text, "text", false, "plain text on stdin/stdout instead of the screen")
	f.clusterFlags.register(cmd.Flags())
	f.langFlag.register(cmd.Flags())
	up.operatorFlags.register(cmd.Flags())
	cmd.Flags().StringVar(&up.Record, "record", "", "record the session to `FILE`, as rlab up --record does")
	return cmd
}

// startText follows lesson l on plain text: the student's lines on stdin
// drive it, its steps and checks are written to stdout. A reset (r, or the
// instructor's) restores the sandbox and guides the lesson asked for from
// step 1.
func (f lessonFlags) startText(ctx context.Context, all []*lessons.Lesson, l *lessons.Lesson, setup func(*launch.Options) error, stdin io.Reader, stdout, stderr io.Writer) error {
	return f.withLessonSandbox(ctx, stderr, setup, func(ctx context.Context, la *launch.Launcher, p *runner.Player) error {
		d := la.Dir
		prog, from, err := launch.Resume(d, l, f.FromStart || f.Reset)
		if err != nil {
			return err
		}
		save := func(pr *runner.Progress) error { return pr.Save(d) }
		la.Tell(p, all)
		// The instructor's reset comes in as the student's r N would.
		lines := readLines(ctx, stdin)
		// ...as a command of its own, and is reported done once this loop
		// carried out that one (not a reset the student typed meanwhile).
		resets, acks := make(chan string), make(chan error, 1)
		asked := false // the reset under way is the instructor's
		answer := func(err error) {
			if asked {
				asked = false
				acks <- err
			}
		}
		la.OnReset(ctx, func(ctx context.Context, n int) error {
			select {
			case resets <- fmt.Sprintf("%s %d", runner.CmdResetAsked, n):
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case err := <-acks:
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		in := make(chan string)
		go func() {
			defer close(in)
			for {
				var line string
				var ok bool
				select {
				case line, ok = <-lines:
					if !ok {
						return
					}
				case line = <-resets:
				case <-ctx.Done():
					return
				}
				select {
				case in <- line:
				case <-ctx.Done():
					return
				}
			}
		}()
		fmt.Fprintln(stderr, "point your kubectl at it: eval \"$(rlab env)\"")
		reset := f.Reset
		for {
			if reset {
				fmt.Fprintf(stdout, "\n%s\n", lessonview.WordsFor(l.Lang).F("Bringing the sandbox back to where lesson %d starts…", l.Number))
				if err := p.Restore(ctx); err != nil {
					err = fmt.Errorf("reset the sandbox for lesson %d: %w", l.Number, err)
					answer(err)
					return err
				}
				prog.Forget(l, time.Now())
				if err := save(prog); err != nil {
					fmt.Fprintf(stdout, "  saving progress: %v\n", err)
				}
				from = 0
				answer(nil)
			}
			err = p.Guide(ctx, l, from, in, stdout, prog, save)
			var re *runner.ResetError
			if !errors.As(err, &re) {
				break
			}
			asked = re.Asked
			next, ferr := lessons.Find(all, re.Lesson)
			switch {
			case ferr != nil:
				fmt.Fprintf(stdout, "  %v\n", ferr)
				answer(ferr)
				from, reset = prog.Resume(l), false
				continue
			case p.CanReset(l, next) != "":
				why := p.CanReset(l, next)
				fmt.Fprintf(stdout, "  %s\n", why)
				answer(errors.New(why))
				from, reset = prog.Resume(l), false
				continue
			}
			l, reset = next, true
		}
		switch {
		case errors.Is(err, runner.ErrQuit):
			fmt.Fprintln(stdout, lessonview.WordsFor(l.Lang).F("progress kept: rlab lesson start %d resumes here", l.Number))
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

// writeColumns writes rows as columns two spaces apart, measured as the
// terminal shows them: a Chinese character takes two columns (tabwriter
// counts it as one).
func writeColumns(out io.Writer, rows [][]string) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(c)+2))
			}
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
	}
}
