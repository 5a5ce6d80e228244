package bench_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/feature/bench"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeRlabEnv); mode != "" {
		os.Exit(fakeRlab(mode)) // this binary is ScreenStartStop's rlab
	}
	// envtest's CRD installer logs through controller-runtime, which prints a
	// warning with a stack trace after 30 s if no logger was ever set.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// TestResultMedians: Result keeps every round and the medians of each side
// (the mean of the middle two for an even count), and the start ratio.
func TestResultMedians(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var r bench.Result
	for _, round := range [][4]int{{3000, 90, 4000, 200}, {5000, 70, 6000, 100}, {4000, 80, 5000, 300}, {9000, 60, 1000, 400}} {
		r.Add(bench.Times{Start: ms(round[0]), Stop: ms(round[1])}, bench.Times{Start: ms(round[2]), Stop: ms(round[3])})
	}
	if len(r.Envtest) != 4 || len(r.Kwokctl) != 4 {
		t.Fatalf("rounds: %d envtest, %d kwokctl, want 4 each", len(r.Envtest), len(r.Kwokctl))
	}
	want := bench.Times{Start: ms(4500), Stop: ms(75)}
	if r.EnvtestMedian != want {
		t.Errorf("envtest median %v, want %v", r.EnvtestMedian, want)
	}
	want = bench.Times{Start: ms(4500), Stop: ms(250)}
	if r.KwokctlMedian != want {
		t.Errorf("kwokctl median %v, want %v", r.KwokctlMedian, want)
	}
	if got := r.Ratio(); got != 1 {
		t.Errorf("Ratio = %v, want 1", got)
	}
	r = bench.Result{EnvtestMedian: bench.Times{Start: 3 * time.Second}, KwokctlMedian: bench.Times{Start: 4 * time.Second}}
	if got := r.Ratio(); got != 0.75 {
		t.Errorf("Ratio = %v, want 0.75", got)
	}
}

// BenchmarkStartVsKwokctl alternates a start and stop of the envtest backend
// with kwokctl creating and deleting a bare cluster from the same binaries.
// Each iteration is one round of both:
//
//	RLAB_KWOKCTL=/path/to/kwokctl go test -run '^$' -bench StartVsKwokctl -benchtime 10x ./sim/bench/
func BenchmarkStartVsKwokctl(b *testing.B) {
	kwokctl := os.Getenv(bench.KwokctlEnv)
	if kwokctl == "" {
		b.Skip("set " + bench.KwokctlEnv + " to a kwokctl binary (go build sigs.k8s.io/kwok/cmd/kwokctl) to compare with it")
	}
	if _, err := exec.LookPath(kwokctl); err != nil {
		b.Skipf("%s=%s: %v", bench.KwokctlEnv, kwokctl, err)
	}
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		b.Fatal(err)
	}
	o := bench.Options{Kwokctl: kwokctl, Assets: dir, Dir: b.TempDir(),
		Progress: func(which string, round int, t bench.Times) {
			b.Logf("round %d %-7s start %6.3fs stop %6.3fs", round, which, t.Start.Seconds(), t.Stop.Seconds())
		},
	}
	var res bench.Result
	i := 0
	for b.Loop() {
		env, kw, err := bench.Round(b.Context(), o, i)
		if err != nil {
			b.Fatal(err)
		}
		res.Add(env, kw)
		i++
	}
	b.ReportMetric(res.EnvtestMedian.Start.Seconds(), "envtest-start-s")
	b.ReportMetric(res.KwokctlMedian.Start.Seconds(), "kwokctl-start-s")
	b.ReportMetric(res.EnvtestMedian.Stop.Seconds(), "envtest-stop-s")
	b.ReportMetric(res.KwokctlMedian.Stop.Seconds(), "kwokctl-stop-s")
	b.ReportMetric(res.Ratio(), "start-ratio")
	b.Logf("%d rounds: median start envtest %.2fs, kwokctl %.2fs, ratio %.2f; median stop envtest %.2fs, kwokctl %.2fs",
		len(res.Envtest), res.EnvtestMedian.Start.Seconds(), res.KwokctlMedian.Start.Seconds(), res.Ratio(),
		res.EnvtestMedian.Stop.Seconds(), res.KwokctlMedian.Stop.Seconds())
}
