package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestPackUnpackOffline is an instructor's archive on a student's machine:
// rlab assets pack for this platform (the control plane reused from the
// cache, rlab built), then, with no Go on PATH, GOPROXY=off, an empty home
// and a working directory outside the source tree, docs/instructor.md's two
// commands: tar takes rlab out, rlab unpacks the rest. The unpacked rlab
// then starts the sandbox, with nothing built.
func TestPackUnpackOffline(t *testing.T) {
	simtest.NeedsControlPlane(t)
	if _, err := assets.Find(os.Getenv); err != nil {
		t.Fatalf("packing reuses the control plane built here: %v", err)
	}
	slug := assets.Host().Slug()
	archive := filepath.Join(t.TempDir(), "rlab-offline.tar.gz")

	t0 := time.Now()
	out, stderr := mustRun(t, 20*time.Minute, "", os.Environ(), rlabBin, "assets", "pack", "-o", archive)
	t.Logf("pack: %s\n%s%s", time.Since(t0).Round(time.Millisecond), stderr, out)
	for _, want := range []string{string(assets.Host()) + ": building rlab", string(assets.Host()) + ": [6/6] kwok: ", string(assets.Host()) + ": writing 7 files"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("pack's progress lacks %q", want)
		}
	}
	if !strings.Contains(out, "wrote "+archive) || !strings.Contains(out, "tar -xzf rlab-offline.tar.gz "+slug+"/rlab && ./"+slug+"/rlab assets unpack rlab-offline.tar.gz") {
		t.Errorf("pack's summary lacks the archive or the student's commands:\n%s", out)
	}

	// The student's machine.
	home := t.TempDir()
	work := filepath.Join(home, "Downloads")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	e := newSandboxEnv(t)
	e.dir = work
	path := offlinePath(t)
	e.env = []string{"HOME=" + home, "PATH=" + path, "GOPROXY=off", "XDG_STATE_HOME=" + e.state, "TMPDIR=" + e.tmp}

	t0 = time.Now()
	mustRun(t, time.Minute, work, e.env, "tar", "-xzf", archive, slug+"/rlab")
	out, _ = mustRun(t, 2*time.Minute, work, e.env, "./"+slug+"/rlab", "assets", "unpack", archive)
	t.Logf("tar + unpack: %s\n%s", time.Since(t0).Round(time.Millisecond), out)
	rlab := filepath.Join(home, ".cache", "rlab", "bin", "rlab")
	cp := filepath.Join(home, ".cache", "rlab", "controlplane", assets.KubeVersion)
	for _, want := range []string{"verified 7 files", "control plane " + assets.KubeVersion + " for " + string(assets.Host()) + ": " + cp, "next: " + rlab + " up"} {
		if !strings.Contains(out, want) {
			t.Errorf("unpack's output lacks %q:\n%s", want, out)
		}
	}
	for _, b := range assets.Binaries {
		if st, err := assets.ReadStamp(filepath.Join(cp, b)); err != nil || st.Origin != assets.OriginPack || st.Platform != assets.Host() {
			t.Errorf("%s: stamp %+v, %v", b, st, err)
		}
	}

	// rlab says the version the manifest says.
	m := readManifest(t, archive)
	if out, _ := mustRun(t, time.Minute, work, e.env, rlab, "version"); !strings.HasPrefix(out, "rlab "+m.Rlab+"\n") {
		t.Errorf("unpacked rlab version = %q, manifest says %q", out, m.Rlab)
	}

	r := startRunOf(t, rlab, e, "--operators", "none", "--for", "10m")
	r.waitStderr(t, readyLine, 3*time.Minute)
	for _, s := range []string{"not built", "not installed", "building", "fetching", "control plane built", "control plane installed"} {
		if strings.Contains(r.stderr.String(), s) {
			t.Errorf("the unpacked rlab built something (%q):\n%s", s, r.stderr)
		}
	}
	if err := syscall.Kill(r.pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := r.wait(t, 60*time.Second); err != nil {
		t.Fatalf("rlab run after SIGINT: %v\n%s", err, r.stderr)
	}
	t.Logf("unpacked rlab run:\n%s", r.stderr)
}

// offlinePath is a PATH of the usual system directories without any that
// holds a go binary: the student has no Go.
func offlinePath(t *testing.T) string {
	t.Helper()
	var dirs []string
	for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		if _, err := os.Stat(filepath.Join(d, "go")); err == nil {
			continue
		}
		dirs = append(dirs, d)
	}
	path := strings.Join(dirs, string(os.PathListSeparator))
	for _, d := range filepath.SplitList(path) {
		if _, err := os.Stat(filepath.Join(d, "go")); err == nil || slices.Contains([]string{"", "."}, d) {
			t.Fatalf("PATH %q would find a go in %q", path, d)
		}
	}
	return path
}

// mustRun runs a command to completion and returns its stdout and stderr,
// failing t if it fails.
func mustRun(t *testing.T, timeout time.Duration, dir string, env []string, name string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // pack's builds die with it
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\nstdout:\n%s\nstderr:\n%s", name, args, err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// readManifest reads the archive's manifest with tar, as anyone can.
func readManifest(t *testing.T, archive string) assets.Manifest {
	t.Helper()
	out, _ := mustRun(t, time.Minute, "", os.Environ(), "tar", "-xzOf", archive, assets.ManifestName)
	var m assets.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("manifest: %v\n%s", err, out)
	}
	return m
}
