package assets

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// upstream is a test fixture: one local HTTP server laid out as the three
// release sites are (the Kubernetes downloads, GitHub's release downloads and
// GitHub's API), serving small stand-in binaries for the platforms it is
// given, with their published sha256s. Its fields break it on purpose.
type upstream struct {
	srv       *httptest.Server
	platforms []Platform
	files     map[string][]byte // URL path → body

	mu       sync.Mutex
	requests map[string]int // URL path → GETs answered
	// Faults, by binary name.
	wrongSum map[string]bool // its published sha256 is another file's
	truncate map[string]bool // headers announce the whole file; half arrives
	failOnce map[string]bool // the first download breaks off half-way
	stall    map[string]bool // half arrives, then nothing
	hang     bool            // no request is ever answered
	limited  bool            // GitHub's API answers 403, its rate limit spent
	auth     string          // the Authorization header GitHub's API last saw
	release  chan struct{}   // closed at cleanup: ends hanging handlers
}

// dropDigests has GitHub's API list assets without digests, as it does for
// assets uploaded before it computed them.
func (u *upstream) dropDigests(t *testing.T) {
	t.Helper()
	for path, b := range u.files {
		if !strings.HasPrefix(path, "/api/") {
			continue
		}
		var rel map[string][]map[string]any
		if err := json.Unmarshal(b, &rel); err != nil {
			t.Fatal(err)
		}
		for _, a := range rel["assets"] {
			a["digest"] = nil
		}
		u.files[path], _ = json.Marshal(rel)
	}
}

// binaryBody is the stand-in binary name for p.
func binaryBody(name string, p Platform) []byte {
	return []byte(fmt.Sprintf("#!/bin/sh\n# %s for %s\n%s\n", name, p, strings.Repeat("x", 64<<10)))
}

func sumOf(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func newUpstream(t testing.TB, platforms ...Platform) *upstream {
	return newUpstreamOf(t, binaryBody, platforms...)
}

// newUpstreamOf serves body(name, p) as each binary.
func newUpstreamOf(t testing.TB, body func(string, Platform) []byte, platforms ...Platform) *upstream {
	t.Helper()
	if len(platforms) == 0 {
		platforms = []Platform{Host()}
	}
	u := &upstream{platforms: platforms, files: map[string][]byte{}, requests: map[string]int{},
		wrongSum: map[string]bool{}, truncate: map[string]bool{}, failOnce: map[string]bool{}, stall: map[string]bool{},
		release: make(chan struct{})}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(func() { close(u.release); u.srv.CloseClientConnections(); u.srv.Close() })
	up := u.layout()
	var etcdSums strings.Builder
	type asset struct {
		Name   string `json:"name"`
		Digest string `json:"digest"`
	}
	apiAssets := map[string][]asset{} // a GitHub API release URL → its assets
	for _, p := range platforms {
		arts, err := up.releaseArtifacts(p, Binaries)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arts {
			bin := body(a.Name, p)
			path := strings.TrimPrefix(a.URL, u.srv.URL)
			body := bin
			if a.Member != "" {
				body = archiveOf(t, a.URL, a.Member, bin)
			}
			u.files[path] = body
			switch {
			case a.Sum.File != "":
				u.files[strings.TrimPrefix(a.Sum.File, u.srv.URL)] = []byte(sumOf(body) + "\n")
			case a.Sum.List != "":
				fmt.Fprintf(&etcdSums, "%s  %s\n", sumOf(body), a.Sum.Entry)
				u.files[strings.TrimPrefix(a.Sum.List, u.srv.URL)] = []byte(etcdSums.String())
			case a.Sum.GitHub != "":
				apiAssets[a.Sum.GitHub] = append(apiAssets[a.Sum.GitHub], asset{Name: a.Sum.Entry, Digest: "sha256:" + sumOf(body)})
			}
		}
	}
	for url, as := range apiAssets {
		// Other assets of the release, as GitHub lists them too.
		all := append([]asset{{Name: "kwokctl-linux-amd64", Digest: "sha256:" + strings.Repeat("0", 64)}}, as...)
		b, _ := json.Marshal(map[string]any{"assets": all})
		u.files[strings.TrimPrefix(url, u.srv.URL)] = b
	}
	return u
}

// layout is the Upstream that points all three sites at the fixture.
func (u *upstream) layout() Upstream {
	return Upstream{Kube: u.srv.URL + "/dl", GitHub: u.srv.URL + "/gh", GitHubAPI: u.srv.URL + "/api"}
}

// archiveOf packs bin as member, as etcd releases it (.tar.gz, or .zip).
func archiveOf(t testing.TB, url, member string, bin []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if strings.HasSuffix(url, ".zip") {
		zw := zip.NewWriter(&buf)
		for _, name := range []string{strings.Replace(member, "/etcd", "/etcdctl", 1), member} {
			w, err := zw.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(bin)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	dir := strings.TrimSuffix(member, "/etcd")
	tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, name := range []string{dir + "/README.md", dir + "/etcdctl", member} {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))})
		tw.Write(bin)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// nameOf is the binary a download path is of ("" for sums and indexes).
func nameOf(path string) string {
	base := path[strings.LastIndexByte(path, '/')+1:]
	switch {
	case strings.HasPrefix(base, "etcd-") && !strings.HasSuffix(base, ".sha256"):
		return "etcd"
	case strings.HasPrefix(base, "kwok-"):
		return "kwok"
	case strings.Contains(base, ".") || base == "SHA256SUMS" || strings.HasPrefix(path, "/api/"):
		return ""
	}
	return base
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	hang := u.hang
	u.mu.Unlock()
	if hang {
		select {
		case <-u.release:
		case <-r.Context().Done():
		}
		return
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		u.mu.Lock()
		u.auth = r.Header.Get("Authorization")
		limited := u.limited
		u.mu.Unlock()
		if limited {
			w.Header().Set("X-RateLimit-Remaining", "0")
			http.Error(w, `{"message":"API rate limit exceeded"}`, http.StatusForbidden)
			return
		}
	}
	body, ok := u.files[r.URL.Path]
	name := nameOf(r.URL.Path)
	u.mu.Lock()
	u.requests[r.URL.Path]++
	wrongSum := strings.HasSuffix(r.URL.Path, ".sha256") && u.wrongSum[strings.TrimSuffix(r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:], ".sha256")]
	truncate, stall := u.truncate[name], u.stall[name]
	failOnce := u.failOnce[name] && name != ""
	if failOnce && body != nil && !strings.HasSuffix(r.URL.Path, ".sha256") {
		delete(u.failOnce, name)
	} else {
		failOnce = false
	}
	u.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if wrongSum {
		body = []byte(sumOf([]byte("something else")) + "\n")
	}
	if name == "" || (!truncate && !stall && !failOnce) {
		w.Write(body)
		return
	}
	// Announce the whole body, send half, then stop.
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body[:len(body)/2])
	w.(http.Flusher).Flush()
	if stall {
		select {
		case <-u.release:
		case <-r.Context().Done():
		}
		return
	}
	// Hijack and close: the client sees the connection end early.
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
		}
	}
}

func (u *upstream) count(path string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests[path]
}

// downloads counts the GETs of binaries (not of sums).
func (u *upstream) downloads() map[string]int {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]int{}
	for p, n := range u.requests {
		if name := nameOf(p); name != "" {
			out[name] += n
		}
	}
	return out
}
