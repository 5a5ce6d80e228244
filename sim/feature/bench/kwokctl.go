package bench

// The control plane's start-up against a fair peer: kwokctl's binary runtime,
// which runs the same five processes (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok) from the same binaries.
// Nothing here depends on testing: `rlab bench` and BenchmarkStartVsKwokctl
// share it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kkloud/rlab/sim/cluster"
)

// KwokctlEnv names the kwokctl binary the comparison runs.
const KwokctlEnv = "RLAB_KWOKCTL"

var seq atomic.Int64

// KwokctlStartStop creates a cluster with kwokctl's binary runtime from the
// control-plane binaries in assets, waits until kwokctl calls it ready, then
// deletes it. The kubeconfig it writes goes to dir, never to the user's.
// With workdir "" kwokctl keeps its cluster where its README's users have
// it, in its default work dir ($KWOK_WORKDIR, else ~/.kwok), whose cache a
// first run fills; else under workdir. The cluster is deleted even if
// creating it failed.
func KwokctlStartStop(ctx context.Context, kwokctl, assets, dir, workdir string) (start, stop time.Duration, err error) {
	for _, d := range []string{dir, workdir} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return 0, 0, fmt.Errorf("kwokctl dir: %w", err)
		}
	}
	name := fmt.Sprintf("rlab-bench-%d-%d", os.Getpid(), seq.Add(1))
	kubeconfig := filepath.Join(dir, name+".kubeconfig")
	run := func(ctx context.Context, args ...string) error {
		cmd := exec.CommandContext(ctx, kwokctl, args...)
		if workdir != "" {
			cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+workdir)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("kwokctl %s: %w\n%s", strings.Join(args[:2], " "), err, lastLines(out, 20))
		}
		return nil
	}
	bin := func(name string) string { return filepath.Join(assets, name) }
	t0 := time.Now()
	createErr := run(ctx, "create", "cluster", "--name", name,
		"--runtime", "binary", "--wait", "2m",
		"--kubeconfig", kubeconfig,
		"--etcd-binary", bin("etcd"),
		"--kube-apiserver-binary", bin("kube-apiserver"),
		"--kube-controller-manager-binary", bin("kube-controller-manager"),
		"--kube-scheduler-binary", bin("kube-scheduler"),
		"--kwok-controller-binary", bin("kwok"),
	)
	start = time.Since(t0)
	// Delete even after a failed or cancelled create: it may have left
	// processes running.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	t1 := time.Now()
	deleteErr := run(dctx, "delete", "cluster", "--name", name, "--kubeconfig", kubeconfig)
	stop = time.Since(t1)
	_ = os.Remove(kubeconfig)
	return start, stop, errors.Join(createErr, deleteErr)
}

// EnvtestStartStop starts the sandbox's envtest backend from the binaries in
// assets, in a new directory under dir, and stops it. The directory is
// removed unless something failed; then it keeps the logs.
func EnvtestStartStop(ctx context.Context, assets, dir string) (start, stop time.Duration, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, 0, fmt.Errorf("envtest dir: %w", err)
	}
	// Short: unix socket names under it must fit 108 bytes.
	root, err := os.MkdirTemp(dir, "e")
	if err != nil {
		return 0, 0, fmt.Errorf("envtest dir: %w", err)
	}
	b := cluster.NewEnvtest(cluster.EnvtestOptions{
		Assets: assets,
		RunDir: filepath.Join(root, "run"),
		LogDir: filepath.Join(root, "logs"),
		PIDDir: filepath.Join(root, "pids"),
	})
	t0 := time.Now()
	startErr := b.Start(ctx)
	start = time.Since(t0)
	if startErr != nil {
		// Start has stopped what it started.
		return start, 0, fmt.Errorf("start envtest backend: %w (logs in %s)", startErr, filepath.Join(root, "logs"))
	}
	t1 := time.Now()
	stopErr := b.Stop()
	stop = time.Since(t1)
	if stopErr != nil {
		return start, stop, fmt.Errorf("stop envtest backend: %w (logs in %s)", stopErr, filepath.Join(root, "logs"))
	}
	return start, stop, os.RemoveAll(root)
}

// Times are one start and stop.
type Times struct{ Start, Stop time.Duration }

// Result is a comparison: every round's times and their medians.
type Result struct {
	Envtest, Kwokctl             []Times
	EnvtestMedian, KwokctlMedian Times
}

// Ratio is the envtest backend's median start time over kwokctl's: below 1
// means the sandbox starts faster.
func (r Result) Ratio() float64 {
	if r.KwokctlMedian.Start == 0 {
		return 0
	}
	return float64(r.EnvtestMedian.Start) / float64(r.KwokctlMedian.Start)
}

// Options configure Compare.
type Options struct {
	Kwokctl string // kwokctl binary
	Assets  string // control-plane binaries
	Dir     string // scratch for both
	Rounds  int    // for Compare
	// Progress, if set, is called after each run: which ("envtest",
	// "kwokctl"), the round (from 0) and its times.
	Progress func(which string, round int, t Times)
}

// Compare alternates the envtest backend and kwokctl, Rounds times each.
func Compare(ctx context.Context, o Options) (Result, error) {
	var r Result
	for i := range o.Rounds {
		env, kw, err := Round(ctx, o, i)
		if err != nil {
			return r, err
		}
		r.Add(env, kw)
	}
	return r, nil
}

// Add records one round and updates the medians.
func (r *Result) Add(envtest, kwokctl Times) {
	r.Envtest = append(r.Envtest, envtest)
	r.Kwokctl = append(r.Kwokctl, kwokctl)
	r.EnvtestMedian, r.KwokctlMedian = median(r.Envtest), median(r.Kwokctl)
}

// Round runs round i of a comparison: one start and stop of each. Which goes
// first swaps every round, so that neither always runs on a machine the other
// has just warmed up (page cache) or left busy.
func Round(ctx context.Context, o Options, i int) (envtest, kwokctl Times, err error) {
	order := []string{"envtest", "kwokctl"}
	if i%2 == 1 {
		slices.Reverse(order)
	}
	for _, which := range order {
		var t Times
		var err error
		if which == "envtest" {
			t.Start, t.Stop, err = EnvtestStartStop(ctx, o.Assets, filepath.Join(o.Dir, "envtest"))
			envtest = t
		} else {
			t.Start, t.Stop, err = KwokctlStartStop(ctx, o.Kwokctl, o.Assets, filepath.Join(o.Dir, "kwok"), "") // its default work dir, as users run it
			kwokctl = t
		}
		if err != nil {
			return envtest, kwokctl, fmt.Errorf("round %d, %s: %w", i, which, err)
		}
		if o.Progress != nil {
			o.Progress(which, i, t)
		}
	}
	return envtest, kwokctl, nil
}

// median is the median start and the median stop (each on its own).
func median(ts []Times) Times {
	if len(ts) == 0 {
		return Times{}
	}
	var starts, stops []time.Duration
	for _, t := range ts {
		starts = append(starts, t.Start)
		stops = append(stops, t.Stop)
	}
	return Times{Start: Median(starts), Stop: Median(stops)}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
