package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/feature/classroom"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/simtest"
)

// BenchmarkClassroomLoad measures a class at work on one shared apiserver:
// for each count in RLAB_BENCH_LOAD_STUDENTS (default 2,4), that many
// students at once, each a real rlab on --backend kubeconfig with a
// classroom kubeconfig (quotas on), following lessons by hand (`rlab lesson
// verify --by-hand --read 5s`), RLAB_BENCH_LOAD_PER lessons each (default
// 2) taken in turn from RLAB_BENCH_LOAD_LESSONS (default 1,2,4,7), student
// i starting at the i-th. Reported per count: the apiserver's request rate,
// p50 and p99 latency (non-watch requests, its own histogram) and the
// answers that are errors (5xx, 429), all over the whole run; each
// student's verdicts; that no student may read or write another's Echoes
// (each asked, after the run, as itself); and where the machine's CPU went:
// the shared apiserver and etcd, against the students' own rlab and
// operators, which in a class run on the students' laptops.
//
//	go test -run '^$' -bench ClassroomLoad -benchtime 1x -timeout 60m ./cmd/rlab/
func BenchmarkClassroomLoad(b *testing.B) {
	counts := envInts(b, "RLAB_BENCH_LOAD_STUDENTS", []int{2, 4})
	pool := envInts(b, "RLAB_BENCH_LOAD_LESSONS", []int{1, 2, 4, 7})
	per := envInts(b, "RLAB_BENCH_LOAD_PER", []int{2})[0]
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	for b.Loop() {
		host := startHost(b)
		admin := kubeFor(b, host)
		dir := b.TempDir()
		// --force: past 12 students the plan refuses the class for lesson
		// 11's pods on kwok's 4000; the lessons here make few.
		if out, errOut, code := cli(b, nil, rlabBin, "classroom", "prepare", "--students", strconv.Itoa(most), "--force", "--kubeconfig", host, "--out", dir); code != 0 {
			b.Fatalf("classroom prepare: exit %d\n%s%s", code, out, errOut)
		}
		shared := sharedProcs(b, filepath.Join(filepath.Dir(host), "pids"))
		var rows, errs []string
		for _, n := range counts {
			r := classLoad(b, admin, dir, shared, n, pool, per)
			rows = append(rows, r.row(n))
			if r.errors > 0 {
				errs = append(errs, fmt.Sprintf("%d students: %s", n, r.errorsBy()))
			}
			b.ReportMetric(r.rate, fmt.Sprintf("n%d-req/s", n))
			b.ReportMetric(r.p50*1000, fmt.Sprintf("n%d-p50-ms", n))
			b.ReportMetric(r.p99*1000, fmt.Sprintf("n%d-p99-ms", n))
			b.ReportMetric(r.errors, fmt.Sprintf("n%d-errors", n))
			b.ReportMetric(r.sharedCPU/r.took.Minutes()/float64(n), fmt.Sprintf("n%d-apiserver-cpu-s/student-min", n))
		}
		b.Logf("students  took  req/s  p50 ms  p99 ms  5xx+429  409  lessons ok  isolated  apiserver+etcd CPU s  students' CPU s\n%s", strings.Join(rows, "\n"))
		if len(errs) > 0 {
			b.Logf("5xx and 429 by code, verb and resource:\n%s", strings.Join(errs, "\n"))
		}
	}
}

// loadResult is one class's run.
type loadResult struct {
	took              time.Duration
	rate, p50, p99    float64
	errors, conflicts float64
	errorCounts       map[string]float64 // "code VERB resource": the 5xx and 429
	ok, lessons       int
	isolated          bool
	sharedCPU, ownCPU float64 // seconds: the apiserver and etcd; the students' rlab trees
	failures          []string
}

// errorsBy is the 5xx and 429, most first, e.g. "429 LIST echoes ×6".
func (r loadResult) errorsBy() string {
	keys := slices.Collect(maps.Keys(r.errorCounts))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(r.errorCounts[b], r.errorCounts[a]), cmp.Compare(a, b))
	})
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s ×%.0f", k, r.errorCounts[k]))
	}
	return strings.Join(out, ", ")
}

func (r loadResult) row(n int) string {
	return fmt.Sprintf("%8d  %4.0fs  %5.1f  %6.1f  %6.1f  %7.0f  %3.0f  %5d of %-3d  %-8v  %20.1f  %15.1f",
		n, r.took.Seconds(), r.rate, r.p50*1000, r.p99*1000, r.errors, r.conflicts, r.ok, r.lessons, r.isolated, r.sharedCPU, r.ownCPU)
}

// classLoad runs n students at once, each by hand through per lessons of
// pool, and measures the apiserver over the whole of it.
func classLoad(b *testing.B, admin kube, dir string, shared []int, n int, pool []int, per int) loadResult {
	b.Helper()
	kc := func(i int) string { return filepath.Join(dir, classroom.Student(i)+".kubeconfig") }
	m0 := scrapeLoad(b, admin)
	cpu0 := cpuSeconds(shared)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(b.Context(), 40*time.Minute)
	defer cancel()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		res loadResult
	)
	okLine := regexp.MustCompile(`(?m)^ok   lesson \d+ `)
	for i := 1; i <= n; i++ {
		var ls []string
		for k := range per {
			ls = append(ls, strconv.Itoa(pool[(i-1+k)%len(pool)]))
		}
		args := append([]string{"lesson", "verify", "--by-hand", "--read", "5s", "--shell-interval", "5s",
			"--backend", "kubeconfig", "--kubeconfig", kc(i)}, ls...)
		cmd := exec.CommandContext(ctx, rlabBin, args...)
		cmd.Env = newSandboxEnv(b).env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
		cmd.WaitDelay = time.Minute
		out := &simtest.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			err := cmd.Wait()
			mu.Lock()
			defer mu.Unlock()
			res.lessons += len(ls)
			res.ok += len(okLine.FindAllString(out.String(), -1))
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				// Its whole tree: rlab waits for its operators and their kubectl.
				res.ownCPU += time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
			}
			if err != nil {
				res.failures = append(res.failures, fmt.Sprintf("%s (lessons %s): %v\n%s", classroom.Student(i), strings.Join(ls, ","), err, out))
			}
		})
	}
	wg.Wait()
	res.took = time.Since(t0)
	res.sharedCPU = cpuSeconds(shared) - cpu0
	m1 := scrapeLoad(b, admin)
	secs := res.took.Seconds()
	res.rate = (m1.total - m0.total) / secs
	res.p50, res.p99 = m1.quantile(m0.metrics, 0.5), m1.quantile(m0.metrics, 0.99)
	res.errorCounts = map[string]float64{}
	for key, v := range m1.codes {
		d := v - m0.codes[key]
		code, _, _ := strings.Cut(key, " ")
		switch c, _ := strconv.Atoi(code); {
		case (c >= 500 || c == 429) && d > 0:
			res.errors += d
			res.errorCounts[key] += d
		case c == 409:
			res.conflicts += d
		}
	}
	res.isolated = isolated(b, dir, n)
	for _, f := range res.failures {
		b.Errorf("%s", f)
	}
	return res
}

// isolated: each student, as itself, may neither list nor create Echoes in
// the next student's namespaces.
func isolated(b *testing.B, dir string, n int) bool {
	b.Helper()
	if n < 2 {
		return true
	}
	ok := true
	for i := 1; i <= n; i++ {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, classroom.Student(i)+".kubeconfig"))
		if err != nil {
			b.Fatal(err)
		}
		dyn := dynamic.NewForConfigOrDie(cfg)
		other := classroom.Prefix(classroom.Student(i%n + 1))
		for _, st := range style.All() {
			echoes := dyn.Resource(echov1.Resource).Namespace(other.Namespace(st))
			_, lerr := echoes.List(b.Context(), metav1.ListOptions{})
			_, derr := echoes.Get(b.Context(), "hello", metav1.GetOptions{})
			if !apierrors.IsForbidden(lerr) || !apierrors.IsForbidden(derr) {
				b.Errorf("%s reading %s: list %v, get %v; want both Forbidden", classroom.Student(i), other.Namespace(st), lerr, derr)
				ok = false
			}
		}
	}
	return ok
}

// loadMetrics are the apiserver's request counters, by code, verb and
// resource ("429 LIST echoes"), and its latency histogram of non-watch
// requests.
type loadMetrics struct {
	metrics
	codes map[string]float64
}

// scrapeLoad reads the apiserver's /metrics, with the requests by code.
func scrapeLoad(b testing.TB, k kube) loadMetrics {
	b.Helper()
	m := loadMetrics{metrics: scrape(b, k), codes: map[string]float64{}}
	raw, err := k.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(b.Context())
	if err != nil {
		b.Fatalf("apiserver metrics: %v", err)
	}
	total := regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)
	label := regexp.MustCompile(`(\w+)="([^"]*)"`)
	for _, line := range strings.Split(string(raw), "\n") {
		s := total.FindStringSubmatch(line)
		if s == nil {
			continue
		}
		l := map[string]string{}
		for _, kv := range label.FindAllStringSubmatch(s[1], -1) {
			l[kv[1]] = kv[2]
		}
		res := l["resource"]
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		v, _ := strconv.ParseFloat(s[2], 64)
		m.codes[l["code"]+" "+l["verb"]+" "+res] += v
	}
	return m
}

// sharedProcs are the pids of the host's apiserver and etcd.
func sharedProcs(b testing.TB, pids string) []int {
	b.Helper()
	entries, err := proc.Entries(pids)
	if err != nil {
		b.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		if e.Name == "kube-apiserver" || e.Name == "etcd" {
			out = append(out, e.PID)
		}
	}
	if len(out) != 2 {
		b.Fatalf("apiserver and etcd in %s: found %v", pids, entries)
	}
	return out
}

// cpuSeconds is the user and system CPU the processes have used, from
// /proc (clock ticks of 1/100 s, Linux's USER_HZ).
func cpuSeconds(pids []int) float64 {
	var ticks float64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// After the command's ")" : state is field 3; utime and stime 14, 15.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 12 {
			u, _ := strconv.ParseFloat(f[11], 64)
			s, _ := strconv.ParseFloat(f[12], 64)
			ticks += u + s
		}
	}
	return ticks / 100
}

// envInts reads a comma-separated list of counts, or def.
func envInts(b testing.TB, name string, def []int) []int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want counts, e.g. 2,4", name, v)
		}
		out = append(out, n)
	}
	return out
}
