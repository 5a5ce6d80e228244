package assets

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The first screen's floor on a fresh machine is getting the control plane.
// These time it from an empty cache to every binary installed and checked,
// with the real binaries of this machine's cache (about 400 MB) served on
// loopback: laid out as the release sites are (etcd in its .tar.gz), and by a
// classroom mirror (rlab assets serve). The source build they replace is
// timed by hand (the note of the issue that added them); run with
//
//	go test -run '^$' -bench Fetch -benchtime 5x ./sim/assets/
//
// Each reports seconds per fetch and MB/s. Skipped where the cache has no
// control plane.
func BenchmarkFetchRelease(b *testing.B) {
	dir := realCache(b)
	u := newUpstreamOf(b, func(name string, p Platform) []byte {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		return data
	})
	benchFetch(b, FetchOptions{Upstream: u.layout()})
}

func BenchmarkFetchMirror(b *testing.B) {
	realCache(b)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{Env: os.Getenv, Addr: "127.0.0.1:0", Ready: func(a string) { ready <- a }})
	}()
	defer func() { cancel(); <-done }()
	select {
	case a := <-ready:
		benchFetch(b, FetchOptions{From: "http://" + a})
	case err := <-done:
		b.Fatal(err)
	}
}

// realCache is the directory of this machine's control plane.
func realCache(b *testing.B) string {
	dir, err := Find(os.Getenv)
	if err != nil {
		b.Skipf("no control plane to serve: %v", err)
	}
	return dir
}

func benchFetch(b *testing.B, o FetchOptions) {
	var bytes int64
	var total time.Duration
	for b.Loop() {
		o.Dir = filepath.Join(b.TempDir(), KubeVersion) // empty
		start := time.Now()
		res, err := Fetch(b.Context(), o)
		total += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Installed) != len(Binaries) {
			b.Fatalf("installed %d", len(res.Installed))
		}
		bytes = res.Bytes()
		b.StopTimer()
		os.RemoveAll(o.Dir)
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/fetch")
	b.ReportMetric(float64(bytes)/1e6/(total.Seconds()/float64(b.N)), "MB/s")
}
