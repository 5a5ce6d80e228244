// Package sandbox is rlab's engine: it owns the state directory, cleans up
// after a run that was killed, starts the cluster backend and tears it all
// down again. It knows nothing of the screen.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/state"
)

// Options configures a sandbox.
type Options struct {
	State  state.Dir
	Assets string // control-plane binaries
	Self   string // binary implementing the exec wrapper; os.Executable() if empty
	Log    *slog.Logger
	// Progress, if set, is called as each start-up phase ends.
	Progress func(cluster.Phase)
}

// Sandbox is a running sandbox.
type Sandbox struct {
	opts    Options
	lock    *state.Lock
	backend cluster.Backend
	// Reaped lists processes a previous, killed run had left behind.
	Reaped []proc.Entry
	// Ready is how long Start took.
	Ready time.Duration

	setTmp, hadTmp bool
	oldTmp         string
}

// Start takes the state dir (or fails with *state.BusyError), reaps whatever a
// killed previous run left, and starts the cluster. On error nothing is left
// running.
func Start(ctx context.Context, opts Options) (_ *Sandbox, err error) {
	began := time.Now()
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("locate rlab binary: %w", err)
		}
		opts.Self = self
	}
	lock, err := opts.State.Acquire()
	if err != nil {
		return nil, err
	}
	s := &Sandbox{opts: opts, lock: lock}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()
	if s.Reaped, err = proc.Reap(opts.State.PIDs(), 10*time.Second); err != nil {
		return nil, fmt.Errorf("clean up previous run: %w", err)
	}
	for _, e := range s.Reaped {
		opts.Log.Warn("killed a process left by a previous run", "name", e.Name, "pid", e.PID)
	}
	if err := os.RemoveAll(opts.State.Run()); err != nil {
		return nil, fmt.Errorf("clean up previous run: %w", err)
	}
	// envtest writes temp files of its own (webhook serving certs) that a
	// killed run cannot remove; kept under the run dir, the next start does.
	tmp := filepath.Join(opts.State.Run(), "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	s.oldTmp, s.hadTmp = os.LookupEnv("TMPDIR")
	s.setTmp = true
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	s.backend = cluster.NewEnvtest(cluster.EnvtestOptions{
		Assets:   opts.Assets,
		Self:     opts.Self,
		RunDir:   opts.State.Run(),
		LogDir:   opts.State.Logs(),
		PIDDir:   opts.State.PIDs(),
		Log:      opts.Log,
		Progress: opts.Progress,
	})
	if err := s.backend.Start(ctx); err != nil {
		return nil, err
	}
	// Written last: `rlab env` hands it out, so it must point at a ready cluster.
	if err := os.WriteFile(opts.State.Kubeconfig(), s.backend.Kubeconfig(), 0o600); err != nil {
		return nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	s.Ready = time.Since(began)
	return s, nil
}

// Backend is the running cluster.
func (s *Sandbox) Backend() cluster.Backend { return s.backend }

// Kubeconfig is the path of the admin kubeconfig `rlab env` hands out.
func (s *Sandbox) Kubeconfig() string { return s.opts.State.Kubeconfig() }

// Stop stops everything Start started, removes the run files and releases the
// state dir. It is safe to call more than once.
func (s *Sandbox) Stop() error {
	var errs []error
	if s.backend != nil {
		errs = append(errs, s.backend.Stop())
		s.backend = nil
	}
	if s.lock != nil {
		// Anything still recorded was not stopped cleanly: kill it now.
		if _, err := proc.Reap(s.opts.State.PIDs(), 10*time.Second); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, os.RemoveAll(s.opts.State.Run()))
		s.lock.Release()
		s.lock = nil
	}
	if s.setTmp {
		if s.hadTmp {
			errs = append(errs, os.Setenv("TMPDIR", s.oldTmp))
		} else {
			errs = append(errs, os.Unsetenv("TMPDIR"))
		}
		s.setTmp = false
	}
	return errors.Join(errs...)
}
