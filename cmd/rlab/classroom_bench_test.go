package main

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/feature/classroom"
	"github.com/kkloud/rlab/sim/simtest"
)

// BenchmarkClassroom measures what a class puts on one shared apiserver: the
// host alone, then RLAB_BENCH_STUDENTS students (default 3) at rest, then the
// same while one more student runs a lesson (`rlab lesson verify`, lessons
// RLAB_BENCH_LESSONS, default 1,3,4). Reported: the apiserver's request
// rate and p99 latency (non-watch requests, from its own metrics) in each
// window, and per student and style the requests their proxies counted.
//
//	go test -run '^$' -bench Classroom -benchtime 1x ./cmd/rlab/
func BenchmarkClassroom(b *testing.B) {
	n := 3
	if v := os.Getenv("RLAB_BENCH_STUDENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("RLAB_BENCH_STUDENTS=%q: want a count", v)
		}
	}
	lessonsArg := "1,3,4"
	if v := os.Getenv("RLAB_BENCH_LESSONS"); v != "" {
		lessonsArg = v
	}
	const window = 30 * time.Second
	for b.Loop() {
		host := startHost(b)
		admin := kubeFor(b, host)
		idle := measure(b, admin, window)

		dir := b.TempDir()
		if out, errOut, code := cli(b, nil, rlabBin, "classroom", "prepare", "--students", strconv.Itoa(n+1), "--kubeconfig", host, "--out", dir); code != 0 {
			b.Fatalf("classroom prepare: exit %d\n%s%s", code, out, errOut)
		}
		kc := func(i int) string { return filepath.Join(dir, classroom.Student(i)+".kubeconfig") }
		var runs []*run
		for i := 1; i <= n; i++ {
			runs = append(runs, startRun(b, newSandboxEnv(b), "--backend", "kubeconfig", "--kubeconfig", kc(i), "--for", "60m", "--output", "json"))
		}
		for _, r := range runs {
			r.waitStderr(b, readyLine, 10*time.Minute)
		}
		// Let the start-up's burst pass: every sample Echo converged.
		settle := time.Now().Add(15 * time.Second)
		for time.Now().Before(settle) {
			select {
			case <-b.Context().Done():
				return
			case <-time.After(time.Until(settle)):
			}
		}
		t0 := time.Now()
		rest := measure(b, admin, window)
		perStyle := map[style.Style]float64{}
		for _, r := range runs {
			for st, c := range countRequests(b, r.stdout.String(), t0, t0.Add(window)) {
				perStyle[st] += c
			}
		}

		// One more student works through lessons meanwhile: the busiest
		// a student gets (every step is played at once, no reading time).
		ctx, cancel := context.WithTimeout(b.Context(), 30*time.Minute)
		verify := exec.CommandContext(ctx, rlabBin, "lesson", "verify", "--shell-interval", "5s",
			"--backend", "kubeconfig", "--kubeconfig", kc(n+1))
		verify.Args = append(verify.Args, strings.Split(lessonsArg, ",")...)
		verify.Env = newSandboxEnv(b).env
		verify.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		verify.Cancel = func() error { return syscall.Kill(-verify.Process.Pid, syscall.SIGINT) }
		verify.WaitDelay = time.Minute
		vout := &simtest.Buffer{}
		verify.Stdout, verify.Stderr = vout, vout
		if err := verify.Start(); err != nil {
			b.Fatal(err)
		}
		// The window starts once its sandbox is up and the lessons play.
		deadline := time.Now().Add(10 * time.Minute)
		for !strings.Contains(vout.String(), "lesson ") && time.Now().Before(deadline) {
			select {
			case <-b.Context().Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		during := measure(b, admin, window)
		err := verify.Wait()
		cancel()
		if err != nil {
			b.Fatalf("lesson verify: %v\n%s", err, vout)
		}

		perStudent := (rest.rate - idle.rate) / float64(n)
		lesson := during.rate - rest.rate
		b.ReportMetric(idle.rate, "host-req/s")
		b.ReportMetric(rest.rate, "class-rest-req/s")
		b.ReportMetric(during.rate, "class-lesson-req/s")
		b.ReportMetric(perStudent, "student-rest-req/s")
		b.ReportMetric(lesson, "student-lesson-extra-req/s")
		b.ReportMetric(rest.p99*1000, "rest-p99-ms")
		b.ReportMetric(during.p99*1000, "lesson-p99-ms")
		for _, st := range style.All() {
			b.ReportMetric(perStyle[st]/float64(n)/window.Seconds(), "student-"+string(st)+"-req/s")
		}
		b.Logf("%d students at rest: %.1f req/s on the apiserver (host alone %.1f), %.2f per student (shell %.2f, client-go %.2f, controller-runtime %.2f), p99 %.0f ms",
			n, rest.rate, idle.rate, perStudent, perStyle[style.Shell]/float64(n)/window.Seconds(),
			perStyle[style.ClientGo]/float64(n)/window.Seconds(), perStyle[style.Runtime]/float64(n)/window.Seconds(), rest.p99*1000)
		b.Logf("one more student in lessons %s: +%.1f req/s, p99 %.0f ms", lessonsArg, lesson, during.p99*1000)
		b.Logf("extrapolated to 30 students at rest: %.0f req/s (+%.0f per student in a lesson at once)",
			idle.rate+30*perStudent, lesson)
		for _, r := range runs {
			_ = syscall.Kill(r.pid(), syscall.SIGINT)
		}
		for _, r := range runs {
			_ = r.wait(b, 3*time.Minute)
		}
	}
}

// load is the apiserver's request rate and p99 latency over a window.
type load struct{ rate, p99 float64 }

// measure reads the apiserver's metrics, waits window, reads them again.
func measure(b testing.TB, k kube, window time.Duration) load {
	b.Helper()
	m0 := scrape(b, k)
	t0 := time.Now()
	select {
	case <-b.Context().Done():
	case <-time.After(window):
	}
	m1 := scrape(b, k)
	secs := time.Since(t0).Seconds()
	return load{rate: (m1.total - m0.total) / secs, p99: m1.quantile(m0, 0.99)}
}

// quantile is the q-quantile of the latencies between m0 and m, linearly
// interpolated in its bucket.
func (m metrics) quantile(m0 metrics, q float64) float64 {
	var les []float64
	for le := range m.buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	count := m.buckets[math.Inf(1)] - m0.buckets[math.Inf(1)]
	prevLe, prevN := 0.0, 0.0
	for _, le := range les {
		c := m.buckets[le] - m0.buckets[le]
		if c >= q*count {
			switch {
			case math.IsInf(le, 1):
				return prevLe
			case c > prevN:
				return prevLe + (le-prevLe)*(q*count-prevN)/(c-prevN)
			}
			return le
		}
		prevLe, prevN = le, c
	}
	return 0
}

type metrics struct {
	total   float64             // apiserver_request_total, every verb
	buckets map[float64]float64 // request duration histogram, non-watch verbs, by le
}

// scrape reads the apiserver's /metrics.
func scrape(b testing.TB, k kube) metrics {
	b.Helper()
	raw, err := k.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(b.Context())
	if err != nil {
		b.Fatalf("apiserver metrics: %v", err)
	}
	m := metrics{buckets: map[float64]float64{}}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, val, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "apiserver_request_total":
			m.total += v
		case "apiserver_request_duration_seconds_bucket":
			if strings.Contains(labels, `verb="WATCH"`) || strings.Contains(labels, `verb="CONNECT"`) {
				continue
			}
			i := strings.Index(labels, `le="`)
			if i < 0 {
				continue
			}
			leS := labels[i+4:]
			leS = leS[:strings.IndexByte(leS, '"')]
			le, err := strconv.ParseFloat(leS, 64)
			if leS == "+Inf" {
				le, err = math.Inf(1), nil
			}
			if err == nil {
				m.buckets[le] += v
			}
		}
	}
	return m
}

// countRequests counts the api.request events of a JSON timeline between
// from and to, by style.
func countRequests(b testing.TB, timeline string, from, to time.Time) map[style.Style]float64 {
	b.Helper()
	out := map[style.Style]float64{}
	for _, line := range strings.Split(timeline, "\n") {
		if !strings.Contains(line, `"api.request"`) {
			continue
		}
		var ev trace.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			b.Fatalf("timeline line %q: %v", line, err)
		}
		if ev.Kind != trace.APIRequest || ev.Time.Before(from) || ev.Time.After(to) {
			continue
		}
		if st := style.FromSource(ev.Source); st != "" {
			out[st]++
		}
	}
	return out
}
