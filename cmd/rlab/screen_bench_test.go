package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kkloud/rlab/sim/proc"
)

// BenchmarkScreenAtRest measures `rlab up`'s own CPU at rest in a real
// terminal (tmux, 200x60), with the screen drawing changed lines
// (tui.Screen) and with Bubble Tea's renderer (RLAB_SCREEN=bubbletea),
// alternated, the order swapped each round: rounds × 2 sandboxes, each
// measured over a window once its panes showed 2/2 and a settle passed.
// The share of one core is rlab's process alone (/proc/<pid>/stat), not
// the sandbox's.
//
//	RLAB_BENCH_ROUNDS=3 go test -run '^$' -bench ScreenAtRest -benchtime 1x ./cmd/rlab/
func BenchmarkScreenAtRest(b *testing.B) {
	rounds := 3
	if v := os.Getenv("RLAB_BENCH_ROUNDS"); v != "" {
		var err error
		if rounds, err = strconv.Atoi(v); err != nil || rounds < 1 {
			b.Fatalf("RLAB_BENCH_ROUNDS=%q: want a count", v)
		}
	}
	const settle, window = 10 * time.Second, 30 * time.Second
	renderers := []struct{ name, env string }{{"screen", ""}, {"bubbletea", "RLAB_SCREEN=bubbletea"}}
	for b.Loop() {
		got := map[string][]float64{}
		for i := range rounds {
			for j := range renderers {
				rd := renderers[(i+j)%2]
				var env []string
				if rd.env != "" {
					env = []string{rd.env}
				}
				r := startTmuxEnv(b, fmt.Sprintf("rest-%s-%d", rd.name, i), 200, 60, env, "up")
				r.ready()
				pid := r.tree[0].PID
				pass(b, settle)
				c0, err := proc.CPUTime(pid)
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				pass(b, window)
				c1, err := proc.CPUTime(pid)
				if err != nil {
					b.Fatal(err)
				}
				share := 100 * (c1 - c0).Seconds() / time.Since(t0).Seconds()
				got[rd.name] = append(got[rd.name], share)
				b.Logf("round %d, %s: rlab up %.2f%% of a core over %s", i+1, rd.name, share, window)
				r.quit()
			}
		}
		med := func(v []float64) float64 {
			s := slices.Sorted(slices.Values(v))
			return s[len(s)/2]
		}
		ms, mb := med(got["screen"]), med(got["bubbletea"])
		b.ReportMetric(ms, "%core-screen")
		b.ReportMetric(mb, "%core-bubbletea")
		b.Logf("median of %d: screen %.2f%%, Bubble Tea's renderer %.2f%%, ratio %.2f (runs: screen %.2f, bubbletea %.2f)",
			rounds, ms, mb, ms/mb, got["screen"], got["bubbletea"])
	}
}

// pass lets d go by, the benchmark's measuring window (not a condition).
func pass(b *testing.B, d time.Duration) {
	select {
	case <-b.Context().Done():
	case <-time.After(d):
	}
}
