package actions

import (
	"strings"
	"testing"

	"github.com/kkloud/rlab/lessons/checks"
)

// TestTestResults: go test -v's output read into one result a test: a
// failure quotes the test's first message, or the build's first error, or
// says the test did not run.
func TestTestResults(t *testing.T) {
	const failed = `=== RUN   TestEchoCRDInstalled
    echo_controller_test.go:22: no client: TestMain started no control plane (step 1)
    echo_controller_test.go:30: a later message
--- FAIL: TestEchoCRDInstalled (0.00s)
=== RUN   TestReconcileMakesDeployment
--- PASS: TestReconcileMakesDeployment (0.41s)
FAIL
FAIL	example.com/echo/internal/controller	2.101s
`
	const unbuilt = `# example.com/echo/internal/controller [example.com/echo/internal/controller.test]
internal/controller/suite_test.go:30:3: undefined: testenv
FAIL	example.com/echo/internal/controller [build failed]
`
	for _, tc := range []struct {
		name, out string
		tests     []string
		want      []string // per test: "pass", or a part of its reason
	}{
		{"a failure and a pass", failed, []string{"TestEchoCRDInstalled", "TestReconcileMakesDeployment"},
			[]string{"fails: echo_controller_test.go:22: no client: TestMain started no control plane (step 1)", "pass"}},
		{"not built", unbuilt, []string{"TestEchoCRDInstalled"},
			[]string{"does not build: internal/controller/suite_test.go:30:3: undefined: testenv"}},
		{"no such test", "testing: warning: no tests to run\nPASS\nok  \texample.com/echo/internal/controller\t0.01s\n", []string{"TestMissing"},
			[]string{"did not run (no test of that name?); go test said: ok  \texample.com/echo/internal/controller\t0.01s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := testResults(tc.out, tc.tests)
			if len(got) != len(tc.tests) {
				t.Fatalf("%d results for %d tests: %+v", len(got), len(tc.tests), got)
			}
			for i, r := range got {
				switch {
				case r.ID != tc.tests[i]:
					t.Errorf("result %d is %s, want %s", i, r.ID, tc.tests[i])
				case tc.want[i] == "pass" && !r.Pass:
					t.Errorf("%s: %q, want a pass", r.ID, r.Reason)
				case tc.want[i] != "pass" && (r.Pass || r.Reason != tc.want[i]):
					t.Errorf("%s: pass %v, %q; want a failure %q", r.ID, r.Pass, r.Reason, tc.want[i])
				}
			}
		})
	}
}

// TestMustFail: a run that must fail passes only on a test that failed,
// not on one that did not build.
func TestMustFail(t *testing.T) {
	tests := []string{"TestReconcileMakesDeployment"}
	for _, tc := range []struct {
		name, out string
		pass      bool
	}{
		{"failed", "--- FAIL: TestReconcileMakesDeployment (0.1s)\n", true},
		{"passed", "--- PASS: TestReconcileMakesDeployment (0.1s)\n", false},
		{"not built", "x_test.go:3:1: undefined: y\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustFail(checks.OnBroken, tc.out, tests, "all pass")
			if r.Pass != tc.pass || r.ID != checks.OnBroken {
				t.Errorf("%+v, want pass %v", r, tc.pass)
			}
			if !tc.pass && !strings.Contains(r.Reason, "all pass") && !strings.Contains(r.Reason, "does not build") {
				t.Errorf("reason %q", r.Reason)
			}
		})
	}
}
