// Package clustertest starts a real envtest backend for the tests of other
// packages, the same way everywhere. The calling test binary must call
// proc.MaybeRunWrapper first thing in TestMain: it serves as envtest's exec
// wrapper.
package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/cluster"
)

// Env is a started backend and the temporary directory holding its state.
type Env struct {
	*cluster.Envtest
	Root   string // run dir, logs, pids
	Assets string // the control-plane binaries
}

// Start finds the control plane (an error names the command that builds it:
// tests fail rather than skip) and starts a backend under a new temp dir
// named after prefix.
func Start(ctx context.Context, prefix string) (*Env, error) {
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("these tests need the control plane: %w", err)
	}
	// Short paths: unix socket names in the run dir must fit 108 bytes.
	root, err := os.MkdirTemp("", "rlab-"+prefix+"-")
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b := cluster.NewEnvtest(cluster.EnvtestOptions{
		Assets: dir,
		Self:   self,
		RunDir: filepath.Join(root, "run"),
		LogDir: filepath.Join(root, "logs"),
		PIDDir: filepath.Join(root, "pids"),
	})
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		return nil, fmt.Errorf("start envtest backend: %w (logs in %s)", err, filepath.Join(root, "logs"))
	}
	return &Env{Envtest: b, Root: root, Assets: dir}, nil
}

// Stop stops the backend and removes its directory; after an unclean stop
// the logs stay for a look.
func (e *Env) Stop() error {
	if err := e.Envtest.Stop(); err != nil {
		return fmt.Errorf("stop envtest backend: %w (logs in %s)", err, filepath.Join(e.Root, "logs"))
	}
	return os.RemoveAll(e.Root)
}
