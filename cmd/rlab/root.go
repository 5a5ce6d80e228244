package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kkloud/rlab/sim/state"
)

// version is stamped by the Makefile (-X main.version=...).
var version = "dev"

// exitCode is an error that only carries an exit status: the message has
// already been printed.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func asExit(err error, ec *exitCode) bool { return errors.As(err, ec) }

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
	root.RunE = func(cmd *cobra.Command, _ []string) error { return runUp(cmd.Context(), *up, cmd.ErrOrStderr()) }
	root.AddCommand(newRunCmd(), newEnvCmd(), newAssetsCmd(), newVersionCmd(), newOperatorCmd(), newUpCmd(), newReplayCmd(), newLessonCmd())
	return root
}

// stateDir is the state dir of this user (XDG_STATE_HOME).
func stateDir() (state.Dir, error) { return state.Default(os.Getenv) }

// claimState finds the state dir and opens rlab's log in it, or says that a
// sandbox is already running there (exit 1): the first steps of every
// command that starts a sandbox.
func claimState(stderr io.Writer) (state.Dir, *slog.Logger, io.Closer, error) {
	d, err := stateDir()
	if err != nil {
		return d, nil, nil, err
	}
	if pid := d.Running(); pid != 0 {
		fmt.Fprintln(stderr, "rlab:", (&state.BusyError{Root: d.Root, PID: pid}).Error())
		return d, nil, nil, exitCode(1)
	}
	log, closeLog, err := openLog(d)
	return d, log, closeLog, err
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
