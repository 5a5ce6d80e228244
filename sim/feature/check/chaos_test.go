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
	"github.com/kkloud/rlab/sim/fault"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
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
	// The fault ends at t0+5s; the window closes 75 s later.
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ended, deadline := at(5*time.Second), at(80*time.Second)
	stuck := func(why string, deploysAfter, statusAfter int, deploys trail) chaosRun {
		return chaosRun{why: "within 75.0s, " + why, creates: 1, writes: 5, refused: 4, deploysAfter: deploysAfter, statusAfter: statusAfter,
			deployTrail: deploys, ended: ended, deadline: deadline}
	}
	deploy := func(tries ...try) trail { return trail{object: "Deployment/echo-chaos-x", tries: tries} }
	refused := func(d time.Duration, woken bool) try { return try{at: at(d), verb: "update", code: 409, woken: woken} }
	// A retry that doubles its wait from 5 ms, 10 times, the last at
	// 2.555 s, 1.28 s after the one before; then six failures events
	// brought, the last at 4.99 s: the next due 2.56 s × 2⁶ ≈ 164 s later.
	var backoff []try
	var wait, total time.Duration = 5 * time.Millisecond, 0
	for i := 0; i < 9; i++ {
		backoff = append(backoff, refused(total, false))
		total += wait
		wait *= 2
	}
	backoff = append(backoff, refused(total, false)) // 2.555 s
	withEvents := append(slices.Clone(backoff), refused(3*time.Second, true), refused(3500*time.Millisecond, true),
		refused(4*time.Second, true), refused(4900*time.Millisecond, true), refused(4950*time.Millisecond, true), refused(4990*time.Millisecond, true))
	const scaled = "Deployment echo-chaos-x has replicas 2, Echo chaos-x asks for 3"
	tests := []struct {
		name    string
		fault   string
		got     chaosRun
		pass    bool
		want    string
		warning string // in the warning
	}{
		{name: "converged", fault: "stale:2s", got: ok, pass: true, want: "converged 1.0s after the fault; 1 create, 20 writes (a clean run: 1, 10)"},
		{name: "converged after retries", fault: "conflict,n=1", pass: true,
			got:  chaosRun{converged: true, took: time.Second, creates: 1, writes: 20, refused: 6, retried: 6, unchanged: 3, owned: []string{"echo-chaos-conflict"}},
			want: "converged 1.0s after the fault; 1 create, 20 writes (a clean run: 1, 10), 3 of them changing nothing (a clean run: 0); 6 refused, 6 of them tried again"},
		{name: "two children", fault: "stale:2s", got: chaosRun{converged: true, creates: 2, writes: 12, owned: []string{"echo-chaos-stale", "echo-chaos-stale-x7k2p"}},
			want: "under stale:2s Echo has 2 Deployments, echo-chaos-stale, echo-chaos-stale-x7k2p (a clean run: 1): it created one it had already made, seeing none"},
		{name: "five children", fault: "stale:2s", got: chaosRun{converged: true, creates: 5, writes: 12, owned: []string{"echo-chaos-stale", "echo-chaos-stale-a", "echo-chaos-stale-b", "echo-chaos-stale-c", "echo-chaos-stale-d"}},
			want: "under stale:2s Echo has 5 Deployments, echo-chaos-stale, echo-chaos-stale-a, echo-chaos-stale-b, and 2 more (a clean run: 1): it created one it had already made, seeing none"},
		{name: "created again", fault: "stale:2s", got: chaosRun{converged: true, creates: 2, writes: 12, owned: []string{"echo-chaos-stale"}},
			want: "under stale:2s it created Deployments 2 times, a clean run 1"},
		{name: "deleted", fault: "stale:2s", got: chaosRun{converged: true, creates: 1, deletes: 1, writes: 12, owned: []string{"echo-chaos-stale"}},
			want: "under stale:2s it deleted Deployments 1 times, a clean run 0"},
		{name: "too many writes", fault: "stale:2s", got: chaosRun{converged: true, creates: 1, writes: 51, owned: []string{"echo-chaos-stale"}},
			want: "under stale:2s it wrote 51 times that could change something, more than 50 (4 × a clean run's 10, plus 10)"},
		// Writes that changed nothing are the rewrites finding's, not
		// counted against the bound again.
		{name: "many writes that changed nothing", fault: "stale:2s", pass: true,
			got:  chaosRun{converged: true, took: time.Second, creates: 1, writes: 80, unchanged: 40, owned: []string{"echo-chaos-stale"}},
			want: "converged 1.0s after the fault; 1 create, 80 writes (a clean run: 1, 10), 40 of them changing nothing (a clean run: 0)"},
		// Stuck: the cause is named when the object behind the wait was
		// not written again after the fault ended, from what the requests
		// show of the refused writes.
		{name: "conflicts dropped", fault: "conflict,n=1",
			got: stuck(scaled, 0, 3, deploy(refused(2*time.Second, false), refused(3*time.Second, true), refused(4100*time.Millisecond, true))),
			want: "under conflict,n=1 it did not converge after the fault ended: within 75.0s, " + scaled +
				"; it wrote no Deployment after the fault ended, so the 4 writes refused under it were dropped, not retried: " +
				"of the 3 refused attempts at update Deployment/echo-chaos-x none was tried again before an event came; " +
				"the last, at 12:00:04.100, 0.9s before the fault ended (answered 409), was never tried again. " +
				"Return the error (requeue it), since no event comes for a refusal that changed nothing"},
		{name: "retry backing off past the window", fault: "error,n=1,code=500", pass: true,
			got:  stuck(scaled, 0, 0, deploy(withEvents...)),
			want: "under error,n=1,code=500 it had not converged within 75.0s, " + scaled + ", but it was retrying (warning)",
			warning: "it was retrying, not dropping: update Deployment/echo-chaos-x was refused 16 times and tried again 9 times with no event in between (waits of 5ms to 1.28s); the last try, at 12:00:04.990, 0.0s before the fault ended, was refused too. " +
				"After 16 failures a limiter that doubles the wait from 5ms on each, as controller-runtime's and client-go's do, waits 163.84s " +
				"(at most 1000s): its next try was due about 12:02:48.830, 88.8s after the judging window closed"},
		// Retries whose next was due inside the window and never came:
		// given up (sample-controller's maxRetries), not slow.
		{name: "retries that stopped", fault: "error,n=1,code=500",
			got: stuck(scaled, 0, 0, deploy(backoff...)),
			want: "so the 4 writes refused under it were dropped, not retried: it retried, then stopped: update Deployment/echo-chaos-x was refused 10 times " +
				"and tried again 9 times with no event in between (waits of 5ms to 1.28s); the last try, at 12:00:02.555, 2.4s before the fault ended, " +
				"was refused, and its next, due about 12:00:05.115 (10 failures: a limiter doubling from 5ms waits 2.56s), never came"},
		{name: "memory after a crash", fault: "crash,n=1", got: stuck(scaled, 0, 1, trail{}),
			want: "under crash,n=1 it did not converge after the fault ended: within 75.0s, " + scaled +
				"; after its restart it wrote no Deployment: it did not compare what the Echo asks with what it found, so the edits made while it was down were never applied"},
		{name: "status not written again", fault: "stale:2s", got: stuck(`status.ready is "2/2"`, 2, 0, trail{}),
			want: `under stale:2s it did not converge after the fault ended: within 75.0s, status.ready is "2/2"; it wrote no status after the fault ended: nothing brought it back to this Echo`},
		{name: "stuck though writing", fault: "conflict,n=1", got: stuck(scaled, 2, 0, trail{}),
			want: "under conflict,n=1 it did not converge after the fault ended: within 75.0s, " + scaled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := fault.Parse(tc.fault)
			if err != nil {
				t.Fatal(err)
			}
			pass, why, warning := judge(f, clean, tc.got)
			if pass != tc.pass || !strings.Contains(why, tc.want) {
				t.Errorf("judge = %v, %q; want %v, %q", pass, why, tc.pass, tc.want)
			}
			if !strings.Contains(warning, tc.warning) || (tc.warning == "") != (warning == "") {
				t.Errorf("warning %q, want %q", warning, tc.warning)
			}
		})
	}
}

// TestRetriedCount: a refusal counts as tried again when any later attempt
// at the same object and subresource follows it.
func TestRetriedCount(t *testing.T) {
	q := func(verb, resource, object string, code int) Request {
		return Request{Verb: verb, Resource: resource, Object: object, Code: code}
	}
	tests := []struct {
		name string
		reqs []Request
		want int
	}{
		{"none refused", []Request{q("update", "deployments", "Deployment/a", 200)}, 0},
		{"retried", []Request{q("update", "deployments", "Deployment/a", 409), q("update", "deployments", "Deployment/a", 200)}, 1},
		{"twice then through", []Request{q("update", "deployments", "Deployment/a", 500), q("update", "deployments", "Deployment/a", 500),
			q("update", "deployments", "Deployment/a", 200)}, 2},
		{"another object is not a retry", []Request{q("update", "echoes/status", "Echo/a", 409), q("update", "deployments", "Deployment/echo-a", 200)}, 0},
		{"reads and Leases do not count", []Request{q("update", "deployments", "Deployment/a", 409), q("get", "deployments", "Deployment/a", 200),
			q("update", "leases", "Lease/x", 409), q("update", "leases", "Lease/x", 200)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retriedCount(tt.reqs); got != tt.want {
				t.Errorf("retriedCount = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestChaosBuiltins runs every chaos scenario against the three built-in
// operators at once, in one sandbox on the real control plane: each
// survives every fault, judged against its own clean run.
func TestChaosBuiltins(t *testing.T) {
	simtest.NeedsControlPlane(t)
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
		want := []string{Deployment, Rewrites}
		for _, f := range faults {
			want = append(want, ChaosID(f.Kind))
		}
		if !slices.Equal(ids, want) {
			t.Errorf("%s ran %v, want %v", st, ids, want)
		}
	}
}

// TestChaosBackoffWarning runs testdata/operators/book, which returns every
// error, under error,n=2, the pattern this check once ran: each of its
// reconciles writes the Deployment and then the status, so every status
// write is refused for the whole fault, controller-runtime's limiter doubles
// the Echo's wait on each failure, and the next try falls long after the
// window. The verdict is a pass with a warning that names the backoff, from
// the retries the proxy saw, not a failure that calls it dropped.
func TestChaosBackoffWarning(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		t.Fatalf("the chaos test needs the control plane: %v", err)
	}
	tmp := t.TempDir()
	bin, book := filepath.Join(tmp, "rlab"), filepath.Join(tmp, "book")
	for out, pkg := range map[string]string{bin: "../../../cmd/rlab", book: "../../../testdata/operators/book"} {
		if msg, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mine, err := style.Custom("mine")
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New()
	rec := NewRequestLog(b, mine)
	defer rec.Close()
	sb, err := sandbox.Start(ctx, sandbox.Options{
		State: state.Dir{Root: t.TempDir()}, Assets: dir, Self: bin, Bus: b,
		Custom: []sandbox.Custom{{Name: mine, Command: book}}, Sample: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sb.Stop(); err != nil {
			t.Error(err)
		}
	}()
	f, err := fault.Parse("error,n=2,code=500")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Run(ctx, Sandbox(sb), rec, Options{Operator: mine, Only: []string{Deployment}, Chaos: []fault.Fault{f}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		t.Logf("%-17s %v %5.1fs %s | %s", r.ID, r.Pass, r.Seconds, r.Reason, r.Warning)
	}
	i := slices.IndexFunc(rs, func(r Result) bool { return r.ID == ChaosID(fault.Error) })
	if i < 0 {
		t.Fatal("chaos-error did not run")
	}
	r := rs[i]
	for _, want := range []string{"it was retrying, not dropping: update Echo/chaos-error was refused", "with no event in between",
		"its next try was due about", "after the judging window closed"} {
		if !r.Pass || !strings.Contains(r.Warning, want) {
			t.Errorf("chaos-error pass %v, warning %q: want a pass whose warning says %q", r.Pass, r.Warning, want)
		}
	}
}
