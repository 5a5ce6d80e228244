package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/feature/bench"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestBench runs `rlab bench` small (one start, two edits and drifts, five
// Echoes per style at the defaults and tuned, 15 s at rest: three of the shell loop's 5 s polls) and checks that every figure was measured and makes
// sense: the report is what docs/reference.md's numbers come from.
func TestBench(t *testing.T) {
	simtest.NeedsControlPlane(t)
	e := newSandboxEnv(t)
	file := filepath.Join(t.TempDir(), "bench.json")
	r := startRlab(t, rlabBin, e, "bench", "--rounds", "1", "--reps", "2", "--echoes", "5", "--idle", "15s", "--json", file,
		"--tune-compare", "--workers", "2", "--qps", "50", "--burst", "100")
	if err := r.wait(t, 10*time.Minute); err != nil {
		t.Fatalf("rlab bench: %v\nstderr:\n%s", err, r.stderr)
	}
	// The table on stdout, the same report as JSON in the file.
	for _, row := range []string{"rlab run --operators none, launched: cluster ready line",
		"rlab up: main screen drawn (median of 1)", "rlab lesson start 1 --text: step 1 shown (median of 1)", "in process: cluster ready, operators started", "edit → converged p50", "API at rest, requests/min", "5 Echoes (replicas 1) → converged", "CPU at rest, sandbox"} {
		if !strings.Contains(r.stdout.String(), row) {
			t.Errorf("table lacks %q:\n%s", row, r.stdout)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("rlab bench --json: %v\n%s", err, data)
	}
	if len(rep.Errors) > 0 {
		t.Fatalf("measurements failed: %v", rep.Errors)
	}
	// One launch of `rlab run --operators none` as a process, timed to its
	// cluster ready line and from SIGINT to its exit.
	if len(rep.Launches) != 1 || rep.Launches[0].Start <= 0 || rep.Launches[0].Stop <= 0 {
		t.Errorf("launches = %+v, want one with a start and a stop", rep.Launches)
	}
	// One `rlab up` and one `rlab lesson start 1 --text` in a terminal,
	// timed to the main screen drawn and to step 1 shown, and from q to
	// their exit. The lesson's step waits for every style's sample at 2/2:
	// it comes after the bare cluster's ready line.
	if rep.ScreensSkipped != "" {
		t.Errorf("screens skipped: %s (this tier has tmux)", rep.ScreensSkipped)
	}
	for name, runs := range map[string][]bench.Peer{"rlab up": rep.Screens, "rlab lesson start": rep.Lessons} {
		if len(runs) != 1 || runs[0].Start <= 0 || runs[0].Stop <= 0 {
			t.Errorf("%s runs = %+v, want one with a start and a stop", name, runs)
		}
	}
	if len(rep.Lessons) == 1 && len(rep.Launches) == 1 && rep.Lessons[0].Start <= rep.Launches[0].Start {
		t.Errorf("step 1 shown after %.0f ms, before a bare cluster is ready (%.0f ms)", rep.Lessons[0].Start, rep.Launches[0].Start)
	}
	if !strings.Contains(rep.SlowestLaunch, "kube-apiserver           serving") || !strings.Contains(r.stdout.String(), "the slowest launch's start-up timeline") {
		t.Errorf("no start-up timeline of the slowest launch in the report:\n%s\n%s", rep.SlowestLaunch, r.stdout)
	}
	if len(rep.Startups) != 1 {
		t.Fatalf("%d startups, want 1", len(rep.Startups))
	}
	s := rep.Startups[0]
	if s.ClusterReady <= 0 || s.Ready < s.ClusterReady || s.Stop <= 0 || len(s.Phases) != len(rep.PhaseList) || len(s.Converged) != 3 {
		t.Errorf("startup = %+v, phases %v: want cluster ready, then ready, a stop time, every phase and 3 styles converged", s, rep.PhaseList)
	}
	for _, st := range style.All() {
		if d := rep.Edit.Converge[st]; d.N != 2 || d.P50 <= 0 {
			t.Errorf("%s edit → converged = %+v, want 2 timings", st, d)
		}
		if d, c := rep.Edit.Ready[st], rep.Edit.Converge[st]; d.N != 2 || d.P50 < c.P50 {
			t.Errorf("%s edit → every Pod Ready = %+v, want 2 timings, none before the operator caught up (%+v)", st, d, c)
		}
		if rep.Edit.APIPerEdit[st] <= 0 {
			t.Errorf("%s made no request per edit", st)
		}
		if d := rep.Drift[st]; d.N != 2 || d.P50 <= 0 {
			t.Errorf("%s drift → repaired = %+v, want 2 timings", st, d)
		}
		if d := rep.GC[st]; d.N != 1 {
			t.Errorf("%s GC = %+v, want 1 timing", st, d)
		}
		for _, run := range []*bench.ScaleResult{rep.ScaleDefaults, rep.Scale} {
			if run == nil {
				continue // said below
			}
			if _, ok := run.Converged[st]; !ok || run.Done[st] != 5 {
				t.Errorf("%s: 5 Echoes not converged (%s): done %d", st, run.Tuning, run.Done[st])
			}
		}
	}
	for _, st := range []style.Style{style.ClientGo, style.Runtime} {
		for _, how := range []string{"kill", "stop"} {
			if d := rep.Failover[st][how]; d.N != 1 || d.P50 <= 0 {
				t.Errorf("%s failover after %s = %+v, want 1 timing", st, how, d)
			}
		}
		// Two replicas renewing and trying for the Lease, every second.
		if l := rep.Idle[st].LeasePerMin; l < 30 || l > rep.Idle[st].PerMin {
			t.Errorf("%s at rest: %.0f Lease requests/min of %.0f", st, l, rep.Idle[st].PerMin)
		}
	}
	if sh := rep.Idle[style.Shell]; sh.PerMin <= 0 || sh.LeasePerMin != 0 {
		t.Errorf("shell at rest: %+v, want polling requests and no Lease", sh)
	}
	// Each scale run says what the Go operators ran with, as their
	// replicas said it; client-go's floor is of its limit.
	for _, tt := range []struct {
		name    string
		run     *bench.ScaleResult
		tuning  string
		workers int
		limits  map[style.Style]bench.Limit
	}{
		{"defaults", rep.ScaleDefaults, "the library's defaults", 1, map[style.Style]bench.Limit{style.ClientGo: {QPS: 5, Burst: 10}, style.Runtime: {QPS: -1, Burst: 10}}},
		{"tuned", rep.Scale, "--workers=2 --qps=50 --burst=100", 2, map[style.Style]bench.Limit{style.ClientGo: {QPS: 50, Burst: 100}, style.Runtime: {QPS: 50, Burst: 100}}},
	} {
		if tt.run == nil {
			t.Errorf("%s: no scale run", tt.name)
			continue
		}
		if tt.run.Tuning != tt.tuning || !reflect.DeepEqual(tt.run.Limits, tt.limits) ||
			tt.run.Workers[style.ClientGo] != tt.workers || tt.run.Workers[style.Runtime] != tt.workers {
			t.Errorf("%s: tuning %q workers %v limits %v, want %q, %d and %v", tt.name, tt.run.Tuning, tt.run.Workers, tt.run.Limits, tt.tuning, tt.workers, tt.limits)
		}
		if f := tt.run.ClientGoFloor; f == nil || f.QPS != tt.limits[style.ClientGo].QPS || f.Requests <= 0 || f.AllRequests < f.Requests {
			t.Errorf("%s: client-go's floor %+v", tt.name, f)
		}
	}
	if c := rep.CPU; c == nil || c.Rlab <= 0 || c.Sandbox <= c.Rlab || c.By["kube-apiserver"] <= 0 {
		t.Errorf("idle CPU = %+v, want rlab's and the apiserver's share, the sandbox's above rlab's", c)
	}
	if rep.RSSMiB <= 0 || rep.Scale.PeakRSSMiB < rep.Scale.RSSMiB {
		t.Errorf("RSS %.0f MiB, scale %.0f (peak %.0f)", rep.RSSMiB, rep.Scale.RSSMiB, rep.Scale.PeakRSSMiB)
	}
}
