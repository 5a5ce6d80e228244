package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/state"
)

func parseStyles(s string) ([]string, error) {
	if s == "none" || s == "" {
		return nil, nil
	}
	var out []string
	for _, st := range strings.Split(s, ",") {
		st = strings.TrimSpace(st)
		if !slices.Contains(sandbox.Styles, st) {
			return nil, fmt.Errorf("--operators: unknown style %q (want some of %s, or none)", st, strings.Join(sandbox.Styles, ","))
		}
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out, nil
}

// printTimeline writes every event, one line each (text or JSON), until stop
// is closed and what is pending has been written.
func printTimeline(sub *bus.Sub, format string, w io.Writer, stop <-chan struct{}) {
	bw := bufio.NewWriter(w)
	flush := func() {
		events, dropped := sub.Drain()
		if dropped > 0 {
			events = append([]trace.Event{{Time: time.Now(), Source: "rlab", Kind: trace.Dropped,
				Fields: map[string]any{"count": dropped}}}, events...)
		}
		for _, e := range events {
			if format == "json" {
				_ = trace.Encode(bw, e)
			} else {
				fmt.Fprintln(bw, e.Line())
			}
		}
		_ = bw.Flush()
	}
	for {
		select {
		case <-sub.Wait():
			flush()
		case <-stop:
			flush()
			return
		}
	}
}

type runFlags struct {
	For           time.Duration
	Output        string
	Operators     string
	ShellInterval time.Duration
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
			return runSandbox(cmd.Context(), f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().DurationVar(&f.For, "for", 0, "stop after this long (0: until Ctrl-C)")
	cmd.Flags().StringVar(&f.Output, "output", "text", "timeline format: text or json")
	cmd.Flags().StringVar(&f.Operators, "operators", strings.Join(sandbox.Styles, ","), "operator styles to run, comma-separated, or none")
	cmd.Flags().DurationVar(&f.ShellInterval, "shell-interval", 5*time.Second, "poll interval of the shell loop")
	return cmd
}

func runSandbox(parent context.Context, f runFlags, stdout, stderr io.Writer) error {
	if f.Output != "text" && f.Output != "json" {
		return fmt.Errorf("--output %q: want text or json", f.Output)
	}
	styles, err := parseStyles(f.Operators)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()

	d, log, closeLog, err := claimState(stderr)
	if err != nil {
		return err
	}
	defer closeLog.Close()

	dir, err := assets.Ensure(ctx, os.Getenv, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "starting sandbox (envtest %s, state in %s)\n", assets.KubeVersion, d.Root)
	b := bus.New()
	timeline := b.Subscribe(1 << 16)
	printed := make(chan struct{})
	stopPrint := make(chan struct{})
	go func() {
		defer close(printed)
		printTimeline(timeline, f.Output, stdout, stopPrint)
	}()
	defer func() {
		close(stopPrint)
		<-printed
	}()
	sb, err := sandbox.Start(ctx, sandbox.Options{
		State:         d,
		Assets:        dir,
		Log:           log,
		Styles:        styles,
		ShellInterval: f.ShellInterval,
		Sample:        len(styles) > 0,
		Bus:           b,
	})
	var busy *state.BusyError
	if errors.As(err, &busy) {
		fmt.Fprintln(stderr, "rlab:", err)
		return exitCode(1)
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "interrupted during start-up; everything started was stopped")
			return exitCode(130)
		}
		return fmt.Errorf("start sandbox: %w (logs in %s)", err, d.Logs())
	}
	for _, e := range sb.Reaped {
		fmt.Fprintf(stderr, "cleaned up %s (pid %d) left by a previous run\n", e.Name, e.PID)
	}
	fmt.Fprintf(stderr, "ready in %.2fs\n", sb.Ready.Seconds())
	for _, p := range sb.Phases() {
		fmt.Fprintf(stderr, "  %-20s %6.2fs\n", p.Name, p.Took.Seconds())
	}
	fmt.Fprintf(stderr, "point your kubectl at it: eval \"$(rlab env)\"   (Ctrl-C stops the sandbox)\n")

	var timeout <-chan time.Time
	if f.For > 0 {
		timeout = time.After(f.For)
	}
	select {
	case <-ctx.Done():
	case <-timeout:
	}
	began := time.Now()
	fmt.Fprintln(stderr, "stopping sandbox ...")
	if err := sb.Stop(); err != nil {
		return fmt.Errorf("stop sandbox: %w", err)
	}
	fmt.Fprintf(stderr, "stopped in %.2fs\n", time.Since(began).Seconds())
	return nil
}
