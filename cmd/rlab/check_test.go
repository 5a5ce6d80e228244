package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/sim/feature/check"
	"github.com/kkloud/rlab/sim/simtest"
)

// fixture is the watching bash operator of testdata, in one of its variants.
func fixture(t *testing.T, variant string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "operators", "watch-operator.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return "bash " + p + " " + variant
}

// TestCheck runs `rlab check` on the built-in operators, which pass every
// required check, and on deliberately broken operators, each of which fails
// the check that catches its mistake, with the reason a student would read.
func TestCheck(t *testing.T) {
	simtest.NeedsControlPlane(t)
	tests := []struct {
		name   string
		args   []string
		passed bool                 // the exit status
		checks map[string]checkWant // checks that must be there, with outcome
		// within bounds the whole run (0: no bound): a broken operator's
		// report comes early.
		within float64
		error  string // in the report's error: the run ended early
	}{
		// The three write observedGeneration and the Ready condition too.
		{name: "shell", args: []string{"shell"}, passed: true, checks: map[string]checkWant{check.Conditions: {pass: true}}},
		{name: "clientgo", args: []string{"clientgo"}, passed: true, checks: map[string]checkWant{check.Conditions: {pass: true}}},
		{name: "runtime", args: []string{"runtime"}, passed: true, checks: map[string]checkWant{check.Conditions: {pass: true}}},
		{name: "clientgo replicas 2", args: []string{"--replicas", "2", "clientgo"}, passed: true,
			checks: map[string]checkWant{check.Leader: {pass: true}, check.Failover: {pass: true}}},
		{name: "runtime replicas 2", args: []string{"--replicas", "2", "runtime"}, passed: true,
			checks: map[string]checkWant{check.Leader: {pass: true}, check.Failover: {pass: true}}},
		// The CLI's --chaos: one scenario, judged against a clean run
		// (every scenario on every built-in: TestChaosBuiltins).
		{name: "runtime under a crash", args: []string{"--only", "deployment", "--chaos=crash", "runtime"}, passed: true,
			checks: map[string]checkWant{"chaos-crash": {pass: true}}},
		{name: "good fixture", args: []string{"--only", "deployment,owner,status,drift-scaled,gc,privilege", "{good}"}, passed: true},
		{name: "no ownerReference", args: []string{"--only", "deployment,owner,gc", "{no-owner}"},
			checks: map[string]checkWant{
				check.Deployment: {pass: true},
				check.Owner:      {reason: "has no ownerReference"},
				check.GC:         {reason: "no controller ownerReference to the Echo, so the garbage collector leaves it"},
			}},
		{name: "no status", args: []string{"--within", "15s", "--only", "deployment,owner,status,scale,conditions", "{no-status}"},
			checks: map[string]checkWant{
				check.Owner:      {pass: true},
				check.Status:     {reason: `status.ready is ""`},
				check.Conditions: {reason: "status.observedGeneration is 0, metadata.generation 2"},
			}},
		{name: "watches only Echoes", args: []string{"--within", "15s", "--only", "status,scale,drift-scaled", "{only-echoes}"},
			checks: map[string]checkWant{
				check.Scale:       {pass: true},
				check.DriftScaled: {reason: "nothing triggered a reconcile: does it watch the Deployments it owns?"},
			}},
		{name: "deletes children", args: []string{"--only", "owner,gc", "{deletes-children}"},
			checks: map[string]checkWant{
				check.Owner: {pass: true},
				check.GC:    {reason: "the operator deleted the Deployment itself (DELETE Deployment/echo-check-gc"},
			}},
		{name: "needs more than least privilege", args: []string{"--within", "15s", "--only", "deployment,privilege", "{lists-pods}"},
			checks: map[string]checkWant{
				check.Deployment: {pass: true},
				check.Privilege:  {reason: "denied: list pods"},
			}},
		{name: "crash loop: in-cluster config", within: 60,
			args: []string{"echo 'error: unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined' >&2; exit 1"},
			checks: map[string]checkWant{
				check.Deployment: {reason: `: load $KUBECONFIG, which rlab sets`},
				check.Status:     {reason: "not checked: see deployment"},
				check.Owner:      {reason: "not checked: see deployment"},
				check.Restart:    {reason: "not checked: see deployment"},
				check.Privilege:  {reason: "no request to judge: see deployment"},
			}},
		{name: "lists across all namespaces", within: 60, args: []string{"kubectl get echoes --all-namespaces --watch"},
			checks: map[string]checkWant{
				check.Deployment: {reason: `it was denied list echoes (all namespaces)`},
				check.Scale:      {reason: "not checked: see deployment"},
				check.Privilege:  {reason: "list echoes (all namespaces)"},
			}},
		{name: "sandbox that cannot start", args: []string{"--backend", "kubeconfig", "--kubeconfig", "/nonexistent/kubeconfig", "shell"},
			error: "/nonexistent/kubeconfig"},
		{name: "two writers", args: []string{"--replicas", "2", "--only", "status,scale,drift-scaled,leader", "{two-writers}"},
			checks: map[string]checkWant{
				check.Scale:  {pass: true},
				check.Leader: {reason: "the replicas took turns writing"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args []string
			for _, a := range tt.args {
				if v, ok := strings.CutPrefix(a, "{"); ok {
					a = fixture(t, strings.TrimSuffix(v, "}"))
				}
				args = append(args, a)
			}
			r := runCheck(t, args...)
			r.wantPassed(t, tt.passed)
			r.wantEarly(t, tt.within, tt.error)
			if tt.passed && len(tt.args) > 0 && !strings.Contains(strings.Join(tt.args, " "), "--only") {
				r.allRan(t)
			}
			r.want(t, tt.checks)
		})
	}
}

// checkWant is a check's expected outcome: pass, or fail saying reason.
type checkWant struct {
	pass   bool
	reason string // in the failing check's reason
}

// checkRun is one `rlab check --output json` and its report.
type checkRun struct {
	report checkReport
	got    map[string]check.Result // by check ID
	err    error                   // the exit status
	stderr string
}

// runCheck runs `rlab check --output json --rest 10s ARGS...` in a sandbox
// of its own (state and temp dirs), logs every check, and returns its
// report; it fails t if stdout is not the report.
func runCheck(t *testing.T, args ...string) checkRun {
	t.Helper()
	e := newSandboxEnv(t)
	args = append([]string{"check", "--output", "json", "--rest", "10s"}, args...)
	began := time.Now()
	r := startRlab(t, rlabBin, e, args...)
	err := r.wait(t, 8*time.Minute)
	t.Logf("rlab %s: %v in %.1fs", strings.Join(args, " "), err, time.Since(began).Seconds())
	c := checkRun{got: map[string]check.Result{}, err: err, stderr: r.stderr.String()}
	if jerr := json.Unmarshal([]byte(r.stdout.String()), &c.report); jerr != nil {
		t.Fatalf("stdout is not the JSON report: %v\nstdout:\n%s\nstderr:\n%s", jerr, r.stdout, r.stderr)
	}
	var lines []string
	for _, res := range c.report.Checks {
		c.got[res.ID] = res
		lines = append(lines, fmt.Sprintf("%s pass=%v %.1fs: %s", res.ID, res.Pass, res.Seconds, res.Reason))
	}
	t.Logf("checks:\n%s", strings.Join(lines, "\n"))
	return c
}

// wantPassed fails t unless the report and the exit status say passed (exit
// status 1 on a failure).
func (c checkRun) wantPassed(t *testing.T, passed bool) {
	t.Helper()
	if c.report.Passed != passed || (c.err == nil) != passed {
		t.Fatalf("passed %v, exit %v; want passed %v (exit status 1 on a failure)\nstderr:\n%s", c.report.Passed, c.err, passed, c.stderr)
	}
}

// wantEarly fails t unless the report came within seconds (0: any time),
// and its error says errSubstr ("": no error, the run ended with its
// checks).
func (c checkRun) wantEarly(t *testing.T, within float64, errSubstr string) {
	t.Helper()
	if within > 0 && c.report.Seconds > within {
		t.Errorf("the report came after %.1fs, want at most %.0fs: the checks waited for an operator that cannot act", c.report.Seconds, within)
	}
	if (c.report.Error == "") != (errSubstr == "") || !strings.Contains(c.report.Error, errSubstr) {
		t.Errorf("report error %q, want %q", c.report.Error, errSubstr)
	}
}

// allRan fails t unless every check that applies to a full run ran.
func (c checkRun) allRan(t *testing.T) {
	t.Helper()
	for _, info := range check.All() {
		if _, ok := c.got[info.ID]; !ok && (!info.Replicated || c.report.Replicas > 1) {
			t.Errorf("check %s did not run", info.ID)
		}
	}
}

// want fails t for each check in want that did not run or ended otherwise.
func (c checkRun) want(t *testing.T, want map[string]checkWant) {
	t.Helper()
	for id, w := range want {
		res, ok := c.got[id]
		switch {
		case !ok:
			t.Errorf("check %s did not run", id)
		case res.Pass != w.pass:
			t.Errorf("check %s pass = %v, want %v: %s", id, res.Pass, w.pass, res.Reason)
		case !w.pass && !strings.Contains(res.Reason, w.reason):
			t.Errorf("check %s reason %q, want it to say %q", id, res.Reason, w.reason)
		}
	}
}

// requiredNormal are the required checks of a run with one replica: what
// a chaos fixture passes before its fault fails it.
const requiredNormal = "deployment,owner,replicas,message,status,scale,drift-scaled,drift-deleted,quoting,invalid,gc,restart,privilege"

// TestCheckChaosFixtures grades the three mistakes of
// testdata/operators/fragile: each passes every required normal check and
// fails the chaos scenario that shows it, saying why. Each case runs in a
// sandbox of its own, beside the others.
func TestCheckChaosFixtures(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "fragile")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../../testdata/operators/fragile").CombinedOutput(); err != nil {
		t.Fatalf("build the fragile operator: %v\n%s", err, out)
	}
	tests := []struct {
		bug, chaos string
		reasons    []string // in chaos-KIND's reason
	}{
		{bug: "generate-name", chaos: "stale", reasons: []string{"under stale:2s Echo has ", "echo-chaos-stale-", "it created one it had already made, seeing none"}},
		{bug: "memory", chaos: "crash", reasons: []string{"Deployment echo-chaos-crash has replicas 2, Echo chaos-crash asks for 3",
			"after its restart it wrote no Deployment: it did not compare what the Echo asks with what it found"}},
		{bug: "drop-conflict", chaos: "conflict", reasons: []string{"under conflict,n=1 it did not converge after the fault ended",
			"it wrote no Deployment after the fault ended, so the", "writes refused under it were dropped, not retried",
			"none was tried again before an event came", "was never tried again"}},
	}
	for _, tt := range tests {
		t.Run(tt.bug, func(t *testing.T) {
			t.Parallel()
			r := runCheck(t, "--within", "15s", "--only", requiredNormal, "--chaos="+tt.chaos, "--", bin, "--bug", tt.bug)
			r.wantPassed(t, false)
			r.wantEarly(t, 0, "")
			id := "chaos-" + tt.chaos
			for _, c := range strings.Split(requiredNormal, ",") {
				if res, ok := r.got[c]; !ok || !res.Pass {
					t.Errorf("check %s: ran %v, passed %v (%s); want it passed", c, ok, res.Pass, res.Reason)
				}
			}
			res, ok := r.got[id]
			if !ok || res.Pass {
				t.Fatalf("check %s: ran %v, passed %v (%s); want it failed", id, ok, res.Pass, res.Reason)
			}
			for _, want := range tt.reasons {
				if !strings.Contains(res.Reason, want) {
					t.Errorf("check %s reason %q, want it to say %q", id, res.Reason, want)
				}
			}
		})
	}
}

// TestCheckChaosBook grades testdata/operators/book, written as the
// kubebuilder book teaches (Reconcile returns every error; CreateOrUpdate
// sets the whole Deployment spec; the status written on every pass), and
// its twin that drops the errors: the first passes every chaos scenario,
// its rewrites on every pass named once as their own finding; the twin
// fails conflict and error, naming the drop. Beside the others.
func TestCheckChaosBook(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "book")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../../testdata/operators/book").CombinedOutput(); err != nil {
		t.Fatalf("build the book operator: %v\n%s", err, out)
	}
	rewrites := checkWant{reason: "changed nothing: update Deployment/echo-chaos-clean"}
	tests := []struct {
		name  string
		args  []string
		chaos string
		want  map[string]checkWant
	}{
		{name: "returns its errors", args: []string{bin}, chaos: "all", want: map[string]checkWant{
			check.Rewrites: rewrites,
		}},
		{name: "drops its errors", args: []string{bin, "--drop-errors"}, chaos: "conflict,error", want: map[string]checkWant{
			check.Rewrites:   rewrites,
			"chaos-conflict": {reason: "writes refused under it were dropped, not retried: of the"},
			"chaos-error":    {reason: "writes refused under it were dropped, not retried: of the"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCheck(t, append([]string{"--only", "deployment", "--chaos=" + tt.chaos, "--"}, tt.args...)...)
			r.wantEarly(t, 0, "")
			r.want(t, tt.want)
			faults, err := check.ParseChaos(tt.chaos)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range faults {
				id := check.ChaosID(f.Kind)
				if _, listed := tt.want[id]; listed {
					continue
				}
				if res, ok := r.got[id]; !ok || !res.Pass {
					t.Errorf("check %s: ran %v, passed %v (%s); want it passed", id, ok, res.Pass, res.Reason)
				}
			}
			if d := r.got[check.Rewrites].Reason; !strings.Contains(d, "spec.progressDeadlineSeconds") {
				t.Errorf("rewrites %q: want it to name a field the apiserver defaults, spec.progressDeadlineSeconds", d)
			}
			r.wantPassed(t, len(tt.want) == 1) // rewrites is informative: it alone does not fail the run
		})
	}
}

// TestPrintResult: the text report marks a required failure FAIL, an
// informative one INFO, a pass with a warning WARN with the warning on its
// own line, and a plain pass PASS.
func TestPrintResult(t *testing.T) {
	tests := []struct {
		name string
		r    check.Result
		want []string
	}{
		{"pass", check.Result{ID: "a", Title: "t", Required: true, Pass: true, Reason: "fine"}, []string{"PASS ", "fine\n"}},
		{"fail", check.Result{ID: "a", Title: "t", Required: true, Reason: "broken"}, []string{"FAIL ", "broken\n"}},
		{"informative", check.Result{ID: "a", Title: "t", Reason: "rewrites"}, []string{"INFO ", "rewrites\n"}},
		{"warning", check.Result{ID: "a", Title: "t", Required: true, Pass: true, Reason: "slow (warning)", Warning: "next try due later"},
			[]string{"WARN ", "slow (warning)\n", "               warning: next try due later\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			printResult(&b, tt.r)
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("printResult wrote %q, want it to contain %q", b.String(), w)
				}
			}
		})
	}
}
