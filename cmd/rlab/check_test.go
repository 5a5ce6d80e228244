package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/sim/feature/check"
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
	type want struct {
		pass   bool
		reason string // in the failing check's reason
	}
	tests := []struct {
		name   string
		args   []string
		passed bool            // the exit status
		checks map[string]want // checks that must be there, with outcome
		// within bounds the whole run (0: no bound): a broken operator's
		// report comes early.
		within float64
		error  string // in the report's error: the run ended early
	}{
		{name: "shell", args: []string{"shell"}, passed: true},
		{name: "clientgo", args: []string{"clientgo"}, passed: true},
		{name: "runtime", args: []string{"runtime"}, passed: true},
		{name: "clientgo replicas 2", args: []string{"--replicas", "2", "clientgo"}, passed: true,
			checks: map[string]want{check.Leader: {pass: true}, check.Failover: {pass: true}}},
		{name: "runtime replicas 2", args: []string{"--replicas", "2", "runtime"}, passed: true,
			checks: map[string]want{check.Leader: {pass: true}, check.Failover: {pass: true}}},
		{name: "good fixture", args: []string{"--only", "deployment,owner,status,drift-scaled,gc,privilege", "{good}"}, passed: true},
		{name: "no ownerReference", args: []string{"--only", "deployment,owner,gc", "{no-owner}"},
			checks: map[string]want{
				check.Deployment: {pass: true},
				check.Owner:      {reason: "has no ownerReference"},
				check.GC:         {reason: "no controller ownerReference to the Echo, so the garbage collector leaves it"},
			}},
		{name: "no status", args: []string{"--within", "15s", "--only", "deployment,owner,status", "{no-status}"},
			checks: map[string]want{
				check.Owner:  {pass: true},
				check.Status: {reason: `status.ready is ""`},
			}},
		{name: "watches only Echoes", args: []string{"--within", "15s", "--only", "status,scale,drift-scaled", "{only-echoes}"},
			checks: map[string]want{
				check.Scale:       {pass: true},
				check.DriftScaled: {reason: "nothing triggered a reconcile: does it watch the Deployments it owns?"},
			}},
		{name: "deletes children", args: []string{"--only", "owner,gc", "{deletes-children}"},
			checks: map[string]want{
				check.Owner: {pass: true},
				check.GC:    {reason: "the operator deleted the Deployment itself (DELETE Deployment/echo-check-gc"},
			}},
		{name: "needs more than least privilege", args: []string{"--within", "15s", "--only", "deployment,privilege", "{lists-pods}"},
			checks: map[string]want{
				check.Deployment: {pass: true},
				check.Privilege:  {reason: "denied: list pods"},
			}},
		{name: "crash loop: in-cluster config", within: 60,
			args: []string{"echo 'error: unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined' >&2; exit 1"},
			checks: map[string]want{
				check.Deployment: {reason: `: load $KUBECONFIG, which rlab sets`},
				check.Status:     {reason: "not checked: see deployment"},
				check.Owner:      {reason: "not checked: see deployment"},
				check.Restart:    {reason: "not checked: see deployment"},
			}},
		{name: "lists across all namespaces", within: 60, args: []string{"kubectl get echoes --all-namespaces --watch"},
			checks: map[string]want{
				check.Deployment: {reason: `it was denied list echoes (all namespaces)`},
				check.Scale:      {reason: "not checked: see deployment"},
				check.Privilege:  {reason: "list echoes (all namespaces)"},
			}},
		{name: "sandbox that cannot start", args: []string{"--backend", "kubeconfig", "--kubeconfig", "/nonexistent/kubeconfig", "shell"},
			error: "/nonexistent/kubeconfig"},
		{name: "two writers", args: []string{"--replicas", "2", "--only", "status,scale,drift-scaled,leader", "{two-writers}"},
			checks: map[string]want{
				check.Scale:  {pass: true},
				check.Leader: {reason: "the replicas took turns writing"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSandboxEnv(t)
			args := []string{"check", "--output", "json", "--rest", "10s"}
			for _, a := range tt.args {
				if v, ok := strings.CutPrefix(a, "{"); ok {
					a = fixture(t, strings.TrimSuffix(v, "}"))
				}
				args = append(args, a)
			}
			began := time.Now()
			r := startRlab(t, rlabBin, e, args...)
			err := r.wait(t, 8*time.Minute)
			t.Logf("rlab %s: %v in %.1fs", strings.Join(args, " "), err, time.Since(began).Seconds())
			var rep checkReport
			if jerr := json.Unmarshal([]byte(r.stdout.String()), &rep); jerr != nil {
				t.Fatalf("stdout is not the JSON report: %v\nstdout:\n%s\nstderr:\n%s", jerr, r.stdout, r.stderr)
			}
			got := map[string]check.Result{}
			var lines []string
			for _, c := range rep.Checks {
				got[c.ID] = c
				lines = append(lines, fmt.Sprintf("%s pass=%v %.1fs: %s", c.ID, c.Pass, c.Seconds, c.Reason))
			}
			t.Logf("checks:\n%s", strings.Join(lines, "\n"))
			if tt.within > 0 && rep.Seconds > tt.within {
				t.Errorf("the report came after %.1fs, want at most %.0fs: the checks waited for an operator that cannot act", rep.Seconds, tt.within)
			}
			if (rep.Error == "") != (tt.error == "") || !strings.Contains(rep.Error, tt.error) {
				t.Errorf("report error %q, want %q", rep.Error, tt.error)
			}
			if rep.Passed != tt.passed || (err == nil) != tt.passed {
				t.Fatalf("passed %v, exit %v; want passed %v (exit status 1 on a failure)\nstderr:\n%s", rep.Passed, err, tt.passed, r.stderr)
			}
			if tt.passed && len(tt.args) > 0 && !strings.Contains(strings.Join(tt.args, " "), "--only") {
				// A full run: every check that applies ran.
				for _, c := range check.All() {
					if _, ok := got[c.ID]; !ok && (!c.Replicated || rep.Replicas > 1) {
						t.Errorf("check %s did not run", c.ID)
					}
				}
			}
			for id, w := range tt.checks {
				c, ok := got[id]
				switch {
				case !ok:
					t.Errorf("check %s did not run", id)
				case c.Pass != w.pass:
					t.Errorf("check %s pass = %v, want %v: %s", id, c.Pass, w.pass, c.Reason)
				case !w.pass && !strings.Contains(c.Reason, w.reason):
					t.Errorf("check %s reason %q, want it to say %q", id, c.Reason, w.reason)
				}
			}
		})
	}
}
