package assets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/sim/simtest"
)

// cacheWith makes a per-user cache holding the control plane of each platform
// (fake binaries, stamped as built there) and returns its Env.
func cacheWith(t *testing.T, ps ...Platform) Env {
	t.Helper()
	env := envOf(map[string]string{"XDG_CACHE_HOME": t.TempDir(), "HOME": "/nonexistent"})
	for _, p := range ps {
		dir := PlatformDir(env, p)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, b := range Binaries {
			if err := os.WriteFile(filepath.Join(dir, b), binaryBody(b, p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := writeStamp(filepath.Join(dir, b), Stamp{Recipe: "0123456789abcdef", Platform: p, Go: "go1.26.1", Origin: OriginBuild}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return env
}

// serveMirror runs Serve until the test ends and returns its URL.
func serveMirror(t *testing.T, o ServeOptions) (url string, log *simtest.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	log = &simtest.Buffer{} // written by the server's handlers, read here
	o.Addr, o.Log, o.Ready = "127.0.0.1:0", log, func(a string) { ready <- a }
	go func() { done <- Serve(ctx, o) }()
	select {
	case a := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
		return "http://" + a, log
	case err := <-done:
		cancel()
		t.Fatalf("Serve: %v", err)
		return "", nil
	}
}

func TestMirror(t *testing.T) {
	fromCache := func(t *testing.T) ServeOptions { return ServeOptions{Env: cacheWith(t, Host(), other())} }
	fromArchive := func(t *testing.T) ServeOptions {
		es := append(fakeEntries(Host(), "0123456789abcdef"), fakeEntries(other(), "0123456789abcdef")...)
		archive := filepath.Join(t.TempDir(), "a.tar.gz")
		writeArchive(t, archive, manifestOf(map[Platform][]entry{Host(): es[:7], other(): es[7:]}, Host(), other()), es, false)
		return ServeOptions{Env: envOf(nil), Archive: archive}
	}
	for _, tc := range []struct {
		name  string
		serve func(*testing.T) ServeOptions
		body  func(b string, p Platform) []byte
	}{
		{"the cache", fromCache, binaryBody},
		{"an archive", fromArchive, func(b string, p Platform) []byte { return []byte("#!/bin/sh\necho " + controlPlanePath(p, b) + "\n") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, log := serveMirror(t, tc.serve(t))
			for _, p := range []Platform{Host(), other()} {
				dir := t.TempDir()
				var out bytes.Buffer
				res, err := Fetch(t.Context(), FetchOptions{Dir: dir, Platform: p, From: url, Timeouts: testTimeouts, Progress: &out})
				if err != nil {
					t.Fatalf("Fetch --from %s for %s: %v\n%s", url, p, err, out.String())
				}
				if len(res.Installed) != len(Binaries) || !strings.Contains(out.String(), "from "+url) {
					t.Errorf("installed %d\n%s", len(res.Installed), out.String())
				}
				for _, b := range Binaries {
					got, err := os.ReadFile(filepath.Join(dir, b))
					if err != nil || !bytes.Equal(got, tc.body(b, p)) {
						t.Errorf("%s for %s: not the mirror's bytes (%v)", b, p, err)
					}
					// Kept as a packed binary is, whatever Go the student has.
					want := Stamp{Recipe: "0123456789abcdef", Platform: p, Go: "go1.26.1", Origin: OriginMirror}
					if s, err := ReadStamp(filepath.Join(dir, b)); err != nil || s != want {
						t.Errorf("%s: stamp %+v, %v; want %+v", b, s, err, want)
					}
				}
			}
			// The handler logs after the body is sent: the client may be
			// done first.
			simtest.Eventually(t, 5*time.Second, "the mirror's log says what it served", func(context.Context) (bool, error) {
				if !strings.Contains(log.String(), "served "+Host().Slug()+"/controlplane/kube-apiserver") {
					return false, fmt.Errorf("log so far:\n%s", log.String())
				}
				return true, nil
			})
		})
	}
}

func TestMirrorRefuses(t *testing.T) {
	env := cacheWith(t, other()) // nothing for this platform
	url, _ := serveMirror(t, ServeOptions{Env: env})
	_, err := Fetch(t.Context(), FetchOptions{Dir: t.TempDir(), From: url, Timeouts: testTimeouts})
	if err == nil || !strings.Contains(err.Error(), "has no control plane for "+string(Host())+", only for "+string(other())) {
		t.Errorf("no platform: %v", err)
	}

	// A file replaced by rename after the mirror indexed it (as a build or
	// a fetch does): the mirror still serves what it indexed.
	env = cacheWith(t, Host())
	url, _ = serveMirror(t, ServeOptions{Env: env})
	tmp := filepath.Join(OwnDir(env), ".kubectl.new")
	if err := os.WriteFile(tmp, []byte("rebuilt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(OwnDir(env), "kubectl")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Fetch(t.Context(), FetchOptions{Dir: dir, From: url, Timeouts: testTimeouts, Names: []string{"kubectl"}}); err != nil {
		t.Errorf("after a rename in the cache: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "kubectl")); !bytes.Equal(got, binaryBody("kubectl", Host())) {
		t.Errorf("kubectl fetched is not what the mirror indexed: %.20q", got)
	}

	// A file overwritten in place after the mirror indexed it: refused by
	// its sum.
	if err := os.WriteFile(filepath.Join(OwnDir(env), "kwok"), []byte("changed"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	_, err = Fetch(t.Context(), FetchOptions{Dir: dir, From: url, Timeouts: testTimeouts})
	var ce *ChecksumError
	if !errors.As(err, &ce) || ce.Name != "kwok" || !strings.Contains(err.Error(), "the mirror's index publishes "+sumOf(binaryBody("kwok", Host()))) {
		t.Errorf("changed file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kwok")); !os.IsNotExist(err) {
		t.Errorf("the changed kwok was installed: %v", err)
	}

	// Something that is not a mirror.
	u := newUpstream(t)
	_, err = Fetch(t.Context(), FetchOptions{Dir: t.TempDir(), From: u.srv.URL, Timeouts: testTimeouts})
	if err == nil || !strings.Contains(err.Error(), "is not an rlab mirror") {
		t.Errorf("not a mirror: %v", err)
	}

	// An empty cache has nothing to serve.
	err = Serve(t.Context(), ServeOptions{Env: envOf(map[string]string{"XDG_CACHE_HOME": t.TempDir()}), Addr: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "nothing to serve") {
		t.Errorf("empty cache: %v", err)
	}
}
