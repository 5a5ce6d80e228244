package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/ship"
)

// shipRunTimeout bounds the wait for a shipped operator's pods to run.
const shipRunTimeout = 2 * time.Minute

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

// shipInto loads img into the sandbox's kind node, follows the audit log
// and the pods, deploys the operator under its ServiceAccount (granted by
// the sandbox: the course's Role, or --rbac) and waits for its pods to run.
func shipInto(ctx context.Context, sb *sandbox.Sandbox, l *launch.Launcher, st style.Style, img *ship.Image, replicas int32, args []string, stdout io.Writer, text bool) (*ship.Pods, error) {
	sh, ok := sb.Cluster().Shipper()
	if !ok {
		return nil, errors.New("--ship needs --backend kind: rlab loads the image into the node of the kind cluster it made (there is no registry) and reads that apiserver's audit log")
	}
	t0 := time.Now()
	if err := sh.LoadImage(func() (io.ReadCloser, error) { return os.Open(img.Archive) }); err != nil {
		return nil, fmt.Errorf("--ship: %w", err)
	}
	host, err := sh.APIServerHost()
	if err != nil {
		return nil, fmt.Errorf("--ship: %w", err)
	}
	if text {
		fmt.Fprintf(stdout, "image loaded into the node in %.1fs\n", time.Since(t0).Seconds())
	}
	ns, kube := sb.Namespace(st), sb.Admin().Kube()
	pods, err := ship.FollowPods(ctx, kube, ns, st.Operator(), st, int(replicas), filepath.Join(l.Dir.Logs(), "shipped"), nil)
	if err != nil {
		return nil, err
	}
	audit, err := sh.AuditLog(ctx)
	if err != nil {
		return pods, fmt.Errorf("--ship: audit log: %w", err)
	}
	user := serviceaccount.MakeUsername(ns, sandbox.ServiceAccount(st))
	go func() { _ = pods.FollowAudit(audit, user, l.Bus.Publish) }()
	if _, err := ship.Deploy(ctx, kube, ship.DeployOptions{
		Namespace: ns, Name: st.Operator(), ServiceAccount: sandbox.ServiceAccount(st), Image: img.Ref,
		Replicas: replicas, Args: args, EchoImage: sb.Cluster().Image(),
		APIServerHost: host, APIServerPort: 6443,
	}); err != nil {
		return pods, fmt.Errorf("--ship: %w", err)
	}
	t1 := time.Now()
	if err := pods.WaitRunning(ctx, shipRunTimeout); err != nil {
		return pods, fmt.Errorf("--ship: %w", err)
	}
	if text {
		fmt.Fprintf(stdout, "deployment %s/%s: %d pod(s) running in %.1fs\n", ns, st.Operator(), replicas, time.Since(t1).Seconds())
	}
	return pods, nil
}
