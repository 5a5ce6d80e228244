package check

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/state"
)

func TestParseChaos(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{in: "all", want: ChaosScenarios},
		{in: "stale", want: []string{"stale:2s"}},
		{in: "stale:5s,crash", want: []string{"stale:5s", "crash,n=1"}},
		{in: "flaky", err: `no fault "flaky"; want all, or some of stale, unobserved, conflict`},
		{in: "stale:soon", err: `duration "soon"`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseChaos(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseChaos(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var specs []string
			for _, f := range got {
				specs = append(specs, f.String())
			}
			if !slices.Equal(specs, tc.want) {
				t.Errorf("ParseChaos(%q) = %v, want %v", tc.in, specs, tc.want)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	clean := chaosRun{converged: true, creates: 1, writes: 10, owned: []string{"echo-chaos-clean"}}
	ok := chaosRun{converged: true, took: time.Second, creates: 1, writes: 20, owned: []string{"echo-chaos-stale"}}
	stuck := func(why string, deploysAfter, statusAfter int) chaosRun {
		return chaosRun{why: "within 30.0s, " + why, creates: 1, writes: 5, refused: 4, deploysAfter: deploysAfter, statusAfter: statusAfter}
	}
	const scaled = "Deployment echo-chaos-x has replicas 2, Echo chaos-x asks for 3"
	tests := []struct {
		name  string
		fault string
		got   chaosRun
		pass  bool
		want  string
	}{
		{"converged", "stale:2s", ok, true, "converged 1.0s after the fault; 1 create, 20 writes (a clean run: 1, 10)"},
		{"two children", "stale:2s", chaosRun{converged: true, creates: 2, writes: 12, owned: []string{"echo-chaos-stale", "echo-chaos-stale-x7k2p"}}, false,
			"under stale:2s Echo has 2 Deployments, echo-chaos-stale, echo-chaos-stale-x7k2p (a clean run: 1): it created one it had already made, seeing none"},
		{"five children", "stale:2s", chaosRun{converged: true, creates: 5, writes: 12, owned: []string{"echo-chaos-stale", "echo-chaos-stale-a", "echo-chaos-stale-b", "echo-chaos-stale-c", "echo-chaos-stale-d"}}, false,
			"under stale:2s Echo has 5 Deployments, echo-chaos-stale, echo-chaos-stale-a, echo-chaos-stale-b, and 2 more (a clean run: 1): it created one it had already made, seeing none"},
		{"created again", "stale:2s", chaosRun{converged: true, creates: 2, writes: 12, owned: []string{"echo-chaos-stale"}}, false,
			"under stale:2s it created Deployments 2 times, a clean run 1"},
		{"deleted", "stale:2s", chaosRun{converged: true, creates: 1, deletes: 1, writes: 12, owned: []string{"echo-chaos-stale"}}, false,
			"under stale:2s it deleted Deployments 1 times, a clean run 0"},
		{"too many writes", "stale:2s", chaosRun{converged: true, creates: 1, writes: 51, owned: []string{"echo-chaos-stale"}}, false,
			"under stale:2s it wrote 51 times, more than 50 (4 × a clean run's 10, plus 10)"},
		// Stuck: the cause is named when the object behind the wait was
		// not written again after the fault ended.
		{"conflicts dropped", "conflict,n=1", stuck(scaled, 0, 3), false,
			"under conflict,n=1 it did not converge after the fault ended: within 30.0s, " + scaled +
				"; it wrote no Deployment after the fault ended, so the 4 writes refused under it were dropped, not retried: " +
				"requeue on an error, since no event comes for a refusal that changed nothing"},
		{"memory after a crash", "crash,n=1", stuck(scaled, 0, 1), false,
			"under crash,n=1 it did not converge after the fault ended: within 30.0s, " + scaled +
				"; after its restart it wrote no Deployment: it did not compare what the Echo asks with what it found, so the edits made while it was down were never applied"},
		{"status not written again", "stale:2s", stuck(`status.ready is "2/2"`, 2, 0), false,
			`under stale:2s it did not converge after the fault ended: within 30.0s, status.ready is "2/2"; it wrote no status after the fault ended: nothing brought it back to this Echo`},
		{"stuck though writing", "conflict,n=1", stuck(scaled, 2, 0), false,
			"under conflict,n=1 it did not converge after the fault ended: within 30.0s, " + scaled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := proxy.ParseFault(tc.fault)
			if err != nil {
				t.Fatal(err)
			}
			pass, why := judge(f, clean, tc.got)
			if pass != tc.pass || why != tc.want {
				t.Errorf("judge = %v, %q; want %v, %q", pass, why, tc.pass, tc.want)
			}
		})
	}
}

// TestChaosBuiltins runs every chaos scenario against the three built-in
// operators at once, in one sandbox on the real control plane: each
// survives every fault, judged against its own clean run.
func TestChaosBuiltins(t *testing.T) {
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		t.Fatalf("the chaos test needs the control plane: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "rlab")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/rlab").CombinedOutput(); err != nil {
		t.Fatalf("build rlab: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := bus.New()
	recs := map[style.Style]*RequestLog{}
	for _, st := range style.All() {
		recs[st] = NewRequestLog(b, st)
		defer recs[st].Close()
	}
	sb, err := sandbox.Start(ctx, sandbox.Options{
		State: state.Dir{Root: t.TempDir()}, Assets: dir, Self: bin, Bus: b,
		Styles: style.All(), ShellInterval: 2 * time.Second, Sample: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sb.Stop(); err != nil {
			t.Error(err)
		}
	}()
	faults, err := ParseChaos("all")
	if err != nil {
		t.Fatal(err)
	}
	results := map[style.Style][]Result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, st := range style.All() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs, err := Run(ctx, Sandbox(sb), recs[st], Options{Operator: st, Only: []string{Deployment}, Chaos: faults})
			if err != nil {
				t.Errorf("%s: %v", st, err)
			}
			mu.Lock()
			results[st] = rs
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, st := range style.All() {
		var ids []string
		for _, r := range results[st] {
			ids = append(ids, r.ID)
			t.Logf("%-8s %-17s %v %5.1fs %s", st, r.ID, r.Pass, r.Seconds, r.Reason)
			if !r.Pass {
				t.Errorf("%s %s: %s", st, r.ID, r.Reason)
			}
		}
		want := []string{Deployment}
		for _, f := range faults {
			want = append(want, ChaosID(f.Kind))
		}
		if !slices.Equal(ids, want) {
			t.Errorf("%s ran %v, want %v", st, ids, want)
		}
	}
}
