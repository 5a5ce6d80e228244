package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/rbac"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/ship"
)

// buildShipImage builds the image of the Go operator in dir (its ./cmd)
// into a temporary folder, which the caller removes.
func buildShipImage(ctx context.Context, dir string, st style.Style) (*ship.Image, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("--ship %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(abs, "go.mod")); err != nil {
		return nil, fmt.Errorf("--ship %s: no go.mod there: give the folder of your operator's Go module (its main package in ./cmd)", dir)
	}
	out, err := os.MkdirTemp("", "rlab-ship-")
	if err != nil {
		return nil, fmt.Errorf("image dir: %w", err)
	}
	img, err := ship.BuildImage(ctx, ship.ImageOptions{Dir: abs, Repository: "rlab.local/" + st.Operator(), Out: filepath.Join(out, "image.tar")})
	if err != nil {
		os.RemoveAll(out)
		return nil, fmt.Errorf("--ship %s: %w", dir, err)
	}
	return img, nil
}

// shipInto ships the operator into the sandbox's kind cluster
// (sandbox.Ship) with the image built before it started.
func shipInto(ctx context.Context, sb *sandbox.Sandbox, st style.Style, img *ship.Image, g *rbac.Grant, replicas int32, args []string, stdout io.Writer, text bool) (*ship.Pods, error) {
	t0 := time.Now()
	sh, err := sb.Ship(ctx, st, sandbox.ShipOptions{Built: img, RBAC: g, Replicas: replicas, Args: args, Progress: func(s string) {
		if text {
			fmt.Fprintf(stdout, "%s (%.1fs)\n", s, time.Since(t0).Seconds())
		}
	}})
	if err != nil {
		return nil, fmt.Errorf("--ship: %w", err)
	}
	return sh.Pods, nil
}
