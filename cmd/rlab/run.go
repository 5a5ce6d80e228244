package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/sandbox"
)

type runFlags struct {
	For       time.Duration
	Output    string
	Operators string
	Timings   bool
	sandboxFlags
}

func newRunCmd() *cobra.Command {
	f := runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Start the sandbox headless: progress on stderr, the timeline on stdout",
		Long: `Start the sandbox without the screen. Once it is ready rlab prints
"ready in <seconds>s" and the start-up phases on stderr, and the timeline of
events on stdout, until --for has passed or Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().DurationVar(&f.For, "for", 0, "stop after this long (0: until Ctrl-C)")
	cmd.Flags().StringVar(&f.Output, "output", "text", "timeline format: text or json")
	cmd.Flags().BoolVar(&f.Timings, "timings", false, "also print the start-up timeline: when each process started and became ready, and the CPU each had used")
	cmd.Flags().StringVar(&f.Operators, "operators", strings.Join(launch.Names(style.All()), ","), "operator styles to run, comma-separated, or none")
	f.sandboxFlags.register(cmd.Flags())
	return cmd
}

// run starts the sandbox and prints its timeline until --for has passed or
// a signal comes, then stops it.
func (f runFlags) run(ctx context.Context, stdout, stderr io.Writer) error {
	if err := f.validate(); err != nil {
		return err
	}
	styles, err := parseStyles(f.Operators)
	if err != nil {
		return err
	}
	opts := launch.Options{Options: sandbox.Options{Styles: styles}, Report: launch.Print(stderr)}
	if err := f.apply(&opts); err != nil {
		return err
	}
	opts.Sample = len(opts.Styles)+len(opts.Custom) > 0
	ctx, stop := interruptible(ctx)
	defer stop()
	l, closeAll, err := f.open()
	if err != nil {
		return err
	}
	defer closeAll()
	defer printTimeline(l.Bus.Subscribe(1<<16), f.Output, stdout)() // until the sandbox has stopped
	sb, err := l.Start(ctx, opts)
	if err != nil {
		return startErr(ctx, err)
	}
	printReady(stderr, sb)
	if f.Timings {
		printTimings(stderr, sb, launched)
	}
	if f.For > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.For)
		defer cancel()
	}
	<-ctx.Done()
	began := time.Now()
	fmt.Fprintln(stderr, "stopping sandbox ...")
	if err := l.Stop(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "stopped in %.2fs\n", time.Since(began).Seconds())
	return nil
}

// printTimings writes the start-up timeline, in seconds since launch (rlab's
// Go code began), and each process's CPU by the end of the backend's
// start-up: the distance from the floor, the apiserver's own start.
func printTimings(w io.Writer, sb *sandbox.Sandbox, from time.Time) {
	tl, ok := sb.Cluster().Timeline()
	if !ok {
		fmt.Fprintf(w, "no start-up timeline on %s: rlab starts none of its processes\n", launch.Info(sb.Cluster()).Backend)
		return
	}
	at := func(d time.Duration) string { return fmt.Sprintf("%6.3f", d.Seconds()) }
	fmt.Fprintf(w, "start-up timeline (seconds since rlab started):\n")
	fmt.Fprintf(w, "  %s  %-24s %s\n", at(sb.Cluster().Began().Sub(from)), "rlab", "the sandbox starts")
	type line struct {
		at time.Time
		m  cluster.Mark
	}
	var lines []line
	for _, m := range tl.Marks {
		lines = append(lines, line{tl.Began.Add(m.At), m})
	}
	for _, m := range sb.Cluster().Marks() {
		lines = append(lines, line{sb.Cluster().Began().Add(m.At), m})
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	for _, l := range lines {
		fmt.Fprintf(w, "  %s  %-24s %s\n", at(l.at.Sub(from)), l.m.Who, l.m.What)
	}
	// The CPU line always ends the timeline: rlab bench reads up to it.
	parts := []string{"not measured on this platform"}
	if len(tl.CPU) > 0 {
		parts = parts[:0]
		for _, c := range tl.CPU {
			parts = append(parts, fmt.Sprintf("%s %.2fs", c.Name, c.CPU.Seconds()))
		}
	}
	fmt.Fprintf(w, "CPU used by the end of the control plane's start-up: %s\n", strings.Join(parts, ", "))
}

// printReady says how long start-up took, phase by phase, and how to use
// the sandbox.
func printReady(w io.Writer, sb *sandbox.Sandbox) {
	fmt.Fprintf(w, "ready in %.2fs on %s\n", sb.Ready.Seconds(), launch.Info(sb.Cluster()).Backend)
	for _, p := range sb.Cluster().Phases() {
		fmt.Fprintf(w, "  %-20s %6.2fs\n", p.Name, p.Took.Seconds())
	}
	if len(sb.Converged) > 0 {
		var per []string
		for _, st := range sb.Styles() {
			if d, ok := sb.Converged[st]; ok {
				per = append(per, fmt.Sprintf("%s %.2fs", st, d.Seconds()))
			}
		}
		fmt.Fprintf(w, "  %s %s after the operators started: %s\n", sandbox.SampleName,
			fmt.Sprintf("%d/%d", sandbox.SampleReplicas, sandbox.SampleReplicas), strings.Join(per, ", "))
	}
	fmt.Fprintf(w, "point your kubectl at it: eval \"$(rlab env)\"   (Ctrl-C stops the sandbox)\n")
}

func parseStyles(s string) ([]style.Style, error) {
	if s == "none" || s == "" {
		return nil, nil
	}
	var out []style.Style
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		st, err := style.Parse(name)
		if err != nil {
			return nil, fmt.Errorf("--operators: unknown style %q (want some of %s, or none)", name, strings.Join(launch.Names(style.All()), ","))
		}
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out, nil
}

// printTimeline writes every event of sub, one line each (text or JSON),
// until stop is called; stop returns once what was pending is written.
func printTimeline(sub *bus.Sub, format string, w io.Writer) (stop func()) {
	bw := bufio.NewWriter(w)
	c := sub.Collect(func(events []trace.Event, dropped int) {
		if dropped > 0 {
			events = append([]trace.Event{{Time: time.Now(), Source: "rlab", Kind: trace.Dropped,
				Payload: trace.Loss{Count: int(dropped)}}}, events...)
		}
		for _, e := range events {
			if e.Kind == trace.StartupStep {
				continue // stderr says how start-up goes, in its own words
			}
			if format == "json" {
				_ = trace.Encode(bw, e)
			} else {
				fmt.Fprintln(bw, e.Line())
			}
		}
		_ = bw.Flush()
	})
	return c.Close
}
