package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/feature/bench"
)

// TestBench runs `rlab bench` small (one start, two edits and drifts, five
// Echoes per style, 15 s at rest: three of the shell loop's 5 s polls) and checks that every figure was measured and makes
// sense: the report is what the README's numbers come from.
func TestBench(t *testing.T) {
	e := newSandboxEnv(t)
	file := filepath.Join(t.TempDir(), "bench.json")
	r := startRlab(t, rlabBin, e, "bench", "--rounds", "1", "--reps", "2", "--echoes", "5", "--idle", "15s", "--json", file)
	if err := r.wait(t, 10*time.Minute); err != nil {
		t.Fatalf("rlab bench: %v\nstderr:\n%s", err, r.stderr)
	}
	// The table on stdout, the same report as JSON in the file.
	for _, row := range []string{"screen opens: cluster ready", "edit → converged p50", "API at rest, requests/min", "5 Echoes (replicas 1) → converged", "CPU at rest, sandbox"} {
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
		if _, ok := rep.Scale.Converged[st]; !ok || rep.Scale.Done[st] != 5 {
			t.Errorf("%s: 5 Echoes not converged: done %d", st, rep.Scale.Done[st])
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
	if c := rep.CPU; c == nil || c.Rlab <= 0 || c.Sandbox <= c.Rlab || c.By["kube-apiserver"] <= 0 {
		t.Errorf("idle CPU = %+v, want rlab's and the apiserver's share, the sandbox's above rlab's", c)
	}
	if rep.RSSMiB <= 0 || rep.Scale.PeakRSSMiB < rep.Scale.RSSMiB {
		t.Errorf("RSS %.0f MiB, scale %.0f (peak %.0f)", rep.RSSMiB, rep.Scale.RSSMiB, rep.Scale.PeakRSSMiB)
	}
}
