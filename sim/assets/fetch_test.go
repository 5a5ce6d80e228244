package assets

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testTimeouts keep the tests that wait on a silent server short.
var testTimeouts = Timeouts{Connect: 2 * time.Second, Header: 500 * time.Millisecond, Stall: 500 * time.Millisecond}

func fetchInto(t *testing.T, u *upstream, dir string, p Platform) (*Fetched, string, error) {
	t.Helper()
	var out bytes.Buffer
	res, err := Fetch(t.Context(), FetchOptions{Dir: dir, Platform: p, Upstream: u.layout(), Timeouts: testTimeouts, Progress: &out})
	return res, out.String(), err
}

// installedNames lists the binaries in dir that are whole and stamped as
// fetched from the release, and fails t on any temporary file left.
func installedNames(t *testing.T, dir string, p Platform) []string {
	t.Helper()
	var names []string
	for _, b := range Binaries {
		got, err := os.ReadFile(filepath.Join(dir, b))
		if err != nil {
			continue
		}
		if !bytes.Equal(got, binaryBody(b, p)) {
			t.Errorf("%s: installed bytes are not the release's", b)
		}
		st, err := os.Stat(filepath.Join(dir, b))
		if err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s: not executable: %v", b, err)
		}
		s, err := ReadStamp(filepath.Join(dir, b))
		if err != nil || s != releaseStamp(p, releaseVersion(b)) {
			t.Errorf("%s: stamp %+v, %v", b, s, err)
		}
		names = append(names, b)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*.fetch-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	return names
}

func TestFetchRelease(t *testing.T) {
	for _, p := range []Platform{"linux/amd64", "darwin/arm64"} { // etcd a .tar.gz, and a .zip
		t.Run(string(p), func(t *testing.T) {
			u := newUpstream(t, p)
			dir := filepath.Join(t.TempDir(), KubeVersion)
			res, out, err := fetchInto(t, u, dir, p)
			if err != nil {
				t.Fatalf("Fetch: %v\n%s", err, out)
			}
			if got := installedNames(t, dir, p); !slices.Equal(got, Binaries) || len(res.Installed) != len(Binaries) {
				t.Fatalf("installed %v (%d reported), want %v\n%s", got, len(res.Installed), Binaries, out)
			}
			for _, want := range []string{"fetching 6 of 6 binaries for " + string(p), "kube-apiserver", "MB/s), sha256 "} {
				if !strings.Contains(out, want) {
					t.Errorf("progress lacks %q:\n%s", want, out)
				}
			}
			// Kubernetes releases no server binaries for macOS: kwokctl's
			// come from kwok-ci/k8s, and the progress says so.
			if mac := strings.Contains(out, "from kwok-ci/k8s (not the Kubernetes project's)"); mac != (p.OS() == "darwin") {
				t.Errorf("kwok-ci/k8s named: %v, on %s:\n%s", mac, p, out)
			}
			if p.OS() == "darwin" && u.count("/gh/kwok-ci/k8s/releases/download/"+KubeVersion+"-kwok.0-darwin-arm64/kube-apiserver") != 1 {
				t.Errorf("kube-apiserver for darwin/arm64 not from kwok-ci/k8s: %v", u.requests)
			}
			// Again: nothing to do, nothing downloaded.
			before := u.downloads()
			res, _, err = fetchInto(t, u, dir, p)
			if err != nil || len(res.Installed) != 0 || len(res.Present) != len(Binaries) {
				t.Fatalf("second Fetch: %+v, %v", res, err)
			}
			if after := u.downloads(); !mapsEqual(before, after) {
				t.Errorf("second Fetch downloaded: %v → %v", before, after)
			}
		})
	}
}

// A GitHub token, when given, goes to GitHub's API (for its rate limit).
func TestFetchGitHubToken(t *testing.T) {
	u := newUpstream(t)
	if _, err := Fetch(t.Context(), FetchOptions{Dir: t.TempDir(), Upstream: u.layout(), Timeouts: testTimeouts, GitHubToken: "t0ken"}); err != nil {
		t.Fatal(err)
	}
	if u.auth != "Bearer t0ken" {
		t.Errorf("GitHub's API saw Authorization %q", u.auth)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Each broken download is refused by name, with both sums where there are
// two; the others install; nothing half-written is left.
func TestFetchRefuses(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(*upstream)
		bad    string   // the binary refused
		inErr  []string // in the error
	}{
		{"checksum mismatch", func(u *upstream) { u.wrongSum["kube-scheduler"] = true }, "kube-scheduler",
			[]string{"kube-scheduler refused, not installed", "sha256 is " + sumOf(binaryBody("kube-scheduler", Host())), "publishes " + sumOf([]byte("something else")), "kube-scheduler.sha256"}},
		{"truncated", func(u *upstream) { u.truncate["kube-controller-manager"] = true }, "kube-controller-manager",
			[]string{"kube-controller-manager refused, not installed", "cut short after", "publishes " + sumOf(binaryBody("kube-controller-manager", Host()))}},
		{"stalled body", func(u *upstream) { u.stall["kwok"] = true }, "kwok",
			[]string{"kwok refused", "no byte for 500ms", "the digest of kwok-" + Host().Slug()}},
		{"etcd archive truncated", func(u *upstream) { u.truncate["etcd"] = true }, "etcd",
			[]string{"etcd refused", "SHA256SUMS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t)
			tc.break_(u)
			dir := t.TempDir()
			start := time.Now()
			res, out, err := fetchInto(t, u, dir, Host())
			if err == nil {
				t.Fatalf("Fetch succeeded\n%s", out)
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("Fetch took %s to give up", time.Since(start))
			}
			var ce *ChecksumError
			if !errors.As(err, &ce) || ce.Name != tc.bad {
				t.Errorf("error is not a ChecksumError for %s: %v", tc.bad, err)
			}
			for _, want := range tc.inErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			got := installedNames(t, dir, Host())
			want := slices.DeleteFunc(slices.Clone(Binaries), func(b string) bool { return b == tc.bad })
			if !slices.Equal(got, want) || len(res.Installed) != len(want) {
				t.Errorf("installed %v, want %v", got, want)
			}
		})
	}
}

// The network's failures are said in one line, within seconds.
func TestFetchUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused

	hanging := newUpstream(t)
	hanging.hang = true

	tests := []struct {
		name string
		up   Upstream
		want string
	}{
		{"refused", Upstream{Kube: closed, GitHub: closed, GitHubAPI: closed}, "connection refused"},
		{"no such host", Upstream{Kube: "http://rlab-test.invalid", GitHub: "http://rlab-test.invalid", GitHubAPI: "http://rlab-test.invalid"}, "rlab-test.invalid"},
		{"a server that never answers", hanging.layout(), "timeout awaiting response headers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			start := time.Now()
			_, err := Fetch(t.Context(), FetchOptions{Dir: dir, Upstream: tc.up, Timeouts: testTimeouts})
			took := time.Since(start)
			var un *UnreachableError
			if !errors.As(err, &un) {
				t.Fatalf("error = %v, want an UnreachableError", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") ||
				!strings.HasPrefix(msg, "the release downloads cannot be reached: ") {
				t.Errorf("error = %q, want one line with %q", msg, tc.want)
			}
			if took > 5*time.Second {
				t.Errorf("took %s to say so", took)
			}
			if names := installedNames(t, dir, Host()); len(names) != 0 {
				t.Errorf("installed %v", names)
			}
		})
	}
}

// A platform the release does not have is a 404, named.
func TestFetchNoSuchPlatform(t *testing.T) {
	u := newUpstream(t, "linux/amd64")
	_, _, err := fetchInto(t, u, t.TempDir(), "darwin/arm64")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 || !strings.Contains(err.Error(), "kube-apiserver for darwin/arm64") {
		t.Fatalf("error = %v, want a 404 naming kube-apiserver for darwin/arm64", err)
	}
}

// A fetch broken off half-way keeps what it installed whole; the next one
// fetches only the rest, and cleans what a killed fetch left.
func TestFetchResumes(t *testing.T) {
	u := newUpstream(t)
	u.failOnce["kwok"] = true
	dir := t.TempDir()
	if _, _, err := fetchInto(t, u, dir, Host()); err == nil {
		t.Fatal("the first Fetch succeeded with kwok broken off")
	}
	if got := installedNames(t, dir, Host()); len(got) != len(Binaries)-1 || slices.Contains(got, "kwok") {
		t.Fatalf("after the broken fetch: %v", got)
	}
	// What a fetch killed mid-download would have left.
	if err := os.WriteFile(filepath.Join(dir, ".kwok.fetch-123"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := u.downloads()
	res, out, err := fetchInto(t, u, dir, Host())
	if err != nil {
		t.Fatalf("second Fetch: %v\n%s", err, out)
	}
	if len(res.Installed) != 1 || res.Installed[0].Name != "kwok" {
		t.Errorf("second Fetch installed %+v, want kwok alone", res.Installed)
	}
	after := u.downloads()
	for _, b := range Binaries {
		if d := after[b] - before[b]; (b == "kwok") != (d == 1) || d > 1 {
			t.Errorf("%s downloaded %d times by the second Fetch", b, d)
		}
	}
	if got := installedNames(t, dir, Host()); !slices.Equal(got, Binaries) {
		t.Errorf("installed %v", got)
	}
}

// Two fetches into one cache take turns: each binary is downloaded once.
func TestFetchLock(t *testing.T) {
	u := newUpstream(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = fetchInto(t, u, dir, Host()) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for b, n := range u.downloads() {
		if n != 1 {
			t.Errorf("%s downloaded %d times", b, n)
		}
	}
}

// Get: the releases, else the source build for what they did not give.
func TestGetFallsBack(t *testing.T) {
	tests := []struct {
		name      string
		source    string
		break_    func(*upstream)
		wantBuilt []string
		wantErr   string
		wantOut   []string
	}{
		{"releases", "", func(*upstream) {}, nil, "", []string{"fetched 6 binaries"}},
		{"no network: the source build", "", func(u *upstream) { u.hang = true }, Binaries, "",
			[]string{"no release download: ", "timeout awaiting response headers", "building from source instead (RLAB_ASSETS_SOURCE=source skips this look)"}},
		{"one refused: built alone", "", func(u *upstream) { u.wrongSum["kubectl"] = true }, []string{"kubectl"}, "",
			[]string{"release download failed: kubectl refused", "building kubectl from source instead"}},
		{"release only: no build", "release", func(u *upstream) { u.hang = true }, nil, "RLAB_ASSETS_SOURCE=release: the release downloads cannot be reached", nil},
		{"source only: no request", "source", func(*upstream) {}, Binaries, "", nil},
		// One binary that cannot be had does not send the others to the
		// source build.
		{"no digest for kwok: built alone", "", func(u *upstream) { u.dropDigests(t) }, []string{"kwok"}, "",
			[]string{"kwok for " + string(Host()) + ": its published sha256", "publishes no sha256 digest for kwok-", "building kwok from source instead", "fetched 5 binaries"}},
		{"GitHub's rate limit: kwok built alone", "", func(u *upstream) { u.limited = true }, []string{"kwok"}, "",
			[]string{"403 Forbidden: GitHub's API answers 60 requests an hour", "set GITHUB_TOKEN", "building kwok from source instead"}},
		{"a bad source", "ftp://x", func(*upstream) {}, nil, "RLAB_ASSETS_SOURCE=ftp://x: want release, source, or a classroom mirror's URL", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstream(t)
			tc.break_(u)
			dir := t.TempDir()
			var built []string
			var out bytes.Buffer
			env := envOf(map[string]string{SourceEnv: tc.source})
			err := GetWith(t.Context(), env, dir, &out, GetOptions{Upstream: u.layout(), Timeouts: testTimeouts,
				Build: func(_ context.Context, names []string) error { built = names; return nil }})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Get error = %v, want %q\n%s", err, tc.wantErr, out.String())
			}
			if !slices.Equal(built, tc.wantBuilt) {
				t.Errorf("built %v, want %v", built, tc.wantBuilt)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if tc.source == "source" && len(u.requests) != 0 {
				t.Errorf("RLAB_ASSETS_SOURCE=source asked the release site: %v", u.requests)
			}
		})
	}
}

func TestParseSource(t *testing.T) {
	tests := []struct {
		in   string
		want Source
		err  bool
	}{
		{"", Source{Kind: "auto"}, false},
		{"release", Source{Kind: "release"}, false},
		{"source", Source{Kind: "source"}, false},
		{"http://10.0.0.5:8080", Source{Kind: "mirror", URL: "http://10.0.0.5:8080"}, false},
		{"mirror", Source{}, true},
		{"10.0.0.5:8080", Source{}, true},
	}
	for _, tc := range tests {
		got, err := ParseSource(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseSource(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

// Binaries built here or unpacked that the build script would rebuild (a
// new recipe, or for those built here a new Go) are fetched anew; current
// ones and release binaries are kept.
func TestGetStale(t *testing.T) {
	cur := Stamp{Recipe: "0123456789abcdef", Platform: Host(), Go: "go1.26.1", Origin: OriginBuild}
	for _, tc := range []struct {
		name  string
		stamp func(b string) Stamp
		stale bool
	}{
		{"built here, current", func(string) Stamp { return cur }, false},
		{"built here, another Go", func(string) Stamp { s := cur; s.Go = "go1.25.0"; return s }, true},
		{"built here, another recipe", func(string) Stamp { s := cur; s.Recipe = "fedcba9876543210"; return s }, true},
		{"unpacked, another Go", func(string) Stamp { s := cur; s.Origin, s.Go = OriginPack, "go1.25.0"; return s }, false},
		{"from a mirror, another recipe", func(string) Stamp { s := cur; s.Origin, s.Recipe = OriginMirror, "fedcba9876543210"; return s }, true},
		{"a release", func(b string) Stamp { return releaseStamp(Host(), releaseVersion(b)) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t)
			dir := t.TempDir()
			for _, b := range Binaries {
				if err := os.WriteFile(filepath.Join(dir, b), []byte("old"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := writeStamp(filepath.Join(dir, b), tc.stamp(b)); err != nil {
					t.Fatal(err)
				}
			}
			var built []string
			var out bytes.Buffer
			err := GetWith(t.Context(), envOf(nil), dir, &out, GetOptions{Upstream: u.layout(), Timeouts: testTimeouts,
				Build: func(_ context.Context, names []string) error { built = names; return nil },
				Stamp: func(context.Context) (Stamp, error) { return cur, nil }})
			if err != nil || len(built) != 0 {
				t.Fatalf("Get: %v; built %v\n%s", err, built, out.String())
			}
			n := 0
			for _, c := range u.downloads() {
				n += c
			}
			if tc.stale {
				if got := installedNames(t, dir, Host()); len(got) != len(Binaries) || n != len(Binaries) {
					t.Errorf("fetched anew %v (%d downloads), want all\n%s", got, n, out.String())
				}
			} else if n != 0 {
				t.Errorf("downloaded %d binaries, want none\n%s", n, out.String())
			}
		})
	}
}
