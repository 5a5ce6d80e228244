package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestAssetsMirror is a classroom on loopback: the instructor's rlab serves
// its cache (rlab assets serve); a student's rlab, with an empty home, no Go
// on PATH and GOPROXY=off, fetches from it (rlab assets fetch --from), then
// starts a sandbox from what it fetched, with nothing built.
func TestAssetsMirror(t *testing.T) {
	simtest.NeedsControlPlane(t)
	if _, err := assets.Find(os.Getenv); err != nil {
		t.Fatalf("the mirror serves the control plane built here: %v", err)
	}
	srv := startRlab(t, rlabBin, newSandboxEnv(t), "assets", "serve", "--addr", "127.0.0.1:0")
	var url string
	if err := simtest.Poll(t.Context(), time.Minute, func(context.Context) (bool, error) {
		url, _, _ = strings.Cut(srv.stdout.String(), "\n")
		return strings.HasPrefix(url, "http://127.0.0.1:") && strings.Contains(srv.stdout.String(), "\n"), nil
	}); err != nil {
		t.Fatalf("rlab assets serve printed no URL: %v\nstderr:\n%s", err, srv.stderr)
	}

	// The student's machine.
	home := t.TempDir()
	e := newSandboxEnv(t)
	e.dir = home
	e.env = []string{"HOME=" + home, "PATH=" + offlinePath(t), "GOPROXY=off", "XDG_STATE_HOME=" + e.state, "TMPDIR=" + e.tmp}
	t0 := time.Now()
	out, stderr := mustRun(t, 2*time.Minute, home, e.env, rlabBin, "assets", "fetch", "--from", url)
	took := time.Since(t0)
	t.Logf("rlab assets fetch --from %s: %s\n%s", url, took.Round(time.Millisecond), stderr)
	cp := filepath.Join(home, ".cache", "rlab", "controlplane", assets.KubeVersion)
	if out != cp+"\n" || !strings.Contains(stderr, "fetched 6 binaries") || !strings.Contains(stderr, "from "+url) {
		t.Errorf("fetch said:\nstdout: %q\nstderr:\n%s", out, stderr)
	}
	for _, b := range assets.Binaries {
		s, err := assets.ReadStamp(filepath.Join(cp, b))
		if err != nil || s.Platform != assets.Host() || (s.Origin != assets.OriginMirror && s.Origin != assets.OriginRelease) {
			t.Errorf("%s: stamp %+v, %v", b, s, err)
		}
	}
	// Fetched again: nothing to do.
	if _, stderr := mustRun(t, time.Minute, home, e.env, rlabBin, "assets", "fetch", "--from", url); !strings.Contains(stderr, "nothing to fetch: all 6 binaries are installed") {
		t.Errorf("a second fetch said:\n%s", stderr)
	}

	r := startRunOf(t, rlabBin, e, "--operators", "none", "--for", "10m")
	r.waitStderr(t, readyLine, 3*time.Minute)
	for _, s := range []string{"not installed", "building", "fetching"} {
		if strings.Contains(r.stderr.String(), s) {
			t.Errorf("the student's rlab got something more (%q):\n%s", s, r.stderr)
		}
	}
	for _, p := range []*run{r, srv} {
		if err := syscall.Kill(p.pid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if err := p.wait(t, 60*time.Second); err != nil {
			t.Fatalf("after SIGINT: %v\n%s", err, p.stderr)
		}
	}
	for _, b := range assets.Binaries {
		if want := "served " + assets.Host().Slug() + "/controlplane/" + b; !strings.Contains(srv.stderr.String(), want) {
			t.Errorf("the mirror's log lacks %q:\n%s", want, srv.stderr)
		}
	}
}
