package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/sim/state"
)

// version is stamped by the Makefile (-X main.version=...).
var version = "dev"

// exitCode is an error that only carries an exit status: the message has
// already been printed.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// errInterrupted is Ctrl-C during start-up: rlab exits 130, as a shell
// does, once everything started has stopped.
var errInterrupted = errors.New("interrupted during start-up; everything started was stopped")

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "rlab",
		Short: "Reconcile Lab: watch three Kubernetes operators reconcile, side by side",
		Long: `Reconcile Lab starts a real local Kubernetes control plane (no Docker),
runs the same Echo operator written three ways, and shows what happens inside each.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
	}
	// `rlab` alone is `rlab up`.
	up := &upFlags{}
	up.register(root.Flags())
	root.RunE = func(cmd *cobra.Command, _ []string) error { return up.run(cmd.Context(), cmd.ErrOrStderr()) }
	root.AddCommand(newRunCmd(), newEnvCmd(), newAssetsCmd(), newVersionCmd(), newOperatorCmd(), newUpCmd(), newReplayCmd(), newLessonCmd(), newClassroomCmd(), newCRDCmd(), newBenchCmd(), newCheckCmd(), newDoCmd())
	return root
}

// stateDir is the state dir of this user (XDG_STATE_HOME).
func stateDir() (state.Dir, error) { return state.Default(os.Getenv) }

// interruptible is ctx, ended by Ctrl-C or SIGTERM: the headless commands
// stop their sandbox then.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// startErr is what a headless command says when the sandbox did not start:
// errInterrupted if a signal stopped the start-up, err otherwise.
func startErr(ctx context.Context, err error) error {
	var busy *state.BusyError
	if ctx.Err() != nil && !errors.As(err, &busy) {
		return errInterrupted
	}
	return err
}

// startProfile writes rlab's CPU profile to path ("": none) until stop.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	pf, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); pf.Close() }, nil
}
