// Package kindtest lets tests run on a real kind cluster: Require skips (or,
// in CI, fails) a test that cannot have one, and Lock keeps this machine to
// one kind cluster at a time across test binaries, or one per lock that
// $RLAB_KIND_TEST_LOCK names: scripts/test-all.sh runs two kind streams side
// by side, each under a lock of its own, with nothing else running.
package kindtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/sim/cluster"
)

// Enable is how to make the kind tests run here.
const Enable = "as root: scripts/setup-docker.sh && make kind-image"

// RequireEnv, set to 1 (CI sets it), turns a kind test that cannot run into a
// failure instead of a skip.
const RequireEnv = "RLAB_REQUIRE_KIND"

// Image is the node image the kind tests use: $RLAB_KIND_IMAGE, or the
// offline image.
func Image() string {
	if img := os.Getenv("RLAB_KIND_IMAGE"); img != "" {
		return img
	}
	return cluster.OfflineNodeImage
}

// Missing says why a kind cluster cannot start here, or "" if it can.
func Missing(ctx context.Context) string {
	if _, err := exec.LookPath("docker"); err != nil {
		return "Docker is not installed"
	}
	if out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		return "Docker does not answer (" + strings.TrimSpace(firstLine(string(out))) + ")"
	}
	if err := exec.CommandContext(ctx, "docker", "image", "inspect", Image()).Run(); err != nil {
		return "node image " + Image() + " is not built"
	}
	return ""
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// Require skips t with one line saying how to enable the kind tests, or
// fails it if RLAB_REQUIRE_KIND=1.
func Require(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	why := Missing(ctx)
	if why == "" {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("kind test cannot run: %s (%s=1); enable it with: %s", why, RequireEnv, Enable)
	}
	t.Skipf("kind tests skipped: %s; enable them with: %s", why, Enable)
}

// Main is for a TestMain that runs a whole package on kind: ok if it can
// run; otherwise it has said why on stderr and code is the exit status: 0
// (skipped) or, with RLAB_REQUIRE_KIND=1, 1.
func Main() (code int, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	why := Missing(ctx)
	if why == "" {
		return 0, true
	}
	if os.Getenv(RequireEnv) == "1" {
		fmt.Fprintf(os.Stderr, "kind tests cannot run: %s (%s=1); enable them with: %s\n", why, RequireEnv, Enable)
		return 1, false
	}
	fmt.Fprintf(os.Stderr, "kind tests skipped: %s; enable them with: %s\n", why, Enable)
	return 0, false
}

// Lock waits until no other test binary holds a kind cluster, and holds the
// machine's kind lock until t ends.
func Lock(t testing.TB) {
	t.Helper()
	t0 := time.Now()
	release, err := Acquire()
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Logf("waited %s for another test's kind cluster", d.Round(time.Second))
	}
	t.Cleanup(release)
}

// LockEnv names the kind test lock to take instead of the machine's one.
const LockEnv = "RLAB_KIND_TEST_LOCK"

// Acquire takes the machine's kind test lock, or $RLAB_KIND_TEST_LOCK (a
// TestMain's whole run, say), and returns its release.
func Acquire() (release func(), err error) {
	name := os.Getenv(LockEnv)
	if name == "" {
		name = "kind-test"
	}
	return cluster.UserLock(name)
}

// Leftovers lists the containers, volumes and networks of kind cluster name
// that exist now (rlab's network only when no container is on it): after a
// stop it must be empty. Volumes are those the cluster's containers mounted
// (before) that still exist.
func Leftovers(ctx context.Context, name string, volumes []string) ([]string, error) {
	var left []string
	out, err := exec.CommandContext(ctx, "docker", "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster="+name, "--format", "{{.Names}}").Output()
	if err != nil {
		return nil, fmt.Errorf("docker ps: %w", err)
	}
	for _, c := range strings.Fields(string(out)) {
		left = append(left, "container "+c)
	}
	for _, v := range volumes {
		if exec.CommandContext(ctx, "docker", "volume", "inspect", v).Run() == nil {
			left = append(left, "volume "+v)
		}
	}
	out, err = exec.CommandContext(ctx, "docker", "network", "ls", "--filter", "label=io.kkloud.rlab.owned", "--format", "{{.Name}}").Output()
	if err != nil {
		return nil, fmt.Errorf("docker network ls: %w", err)
	}
	// rlab removes its network when the last container leaves it: another
	// kind cluster of this machine (under another lock) may still be on it.
	for _, n := range strings.Fields(string(out)) {
		on, err := exec.CommandContext(ctx, "docker", "network", "inspect", n, "--format", "{{len .Containers}}").Output()
		if err == nil && strings.TrimSpace(string(on)) == "0" { // an error: gone since the ls
			left = append(left, "network "+n+" with no container on it")
		}
	}
	return left, nil
}

// Volumes lists the volumes mounted by kind cluster name's containers.
func Volumes(ctx context.Context, name string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "docker", "ps", "-a", "-q", "--filter", "label=io.x-k8s.kind.cluster="+name).Output()
	if err != nil {
		return nil, fmt.Errorf("docker ps: %w", err)
	}
	var vols []string
	for _, id := range strings.Fields(string(out)) {
		v, err := exec.CommandContext(ctx, "docker", "inspect", "--format", `{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}`, id).Output()
		if err != nil {
			return nil, fmt.Errorf("docker inspect: %w", err)
		}
		vols = append(vols, strings.Fields(string(v))...)
	}
	return vols, nil
}
