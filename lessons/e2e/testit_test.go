package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
)

// TestTestIt follows lesson 22 as the screen does, on a sandbox that runs
// the lesson's starter project: before each step's fix, its check's go
// test fails on the project as it is, quoting the test's own message (the
// student who does nothing fails every step); then a swaps in the fix and
// the step passes, its test run again without the garbage collector or on
// the broken reconciler, where it fails. It runs beside the lesson
// verifications.
func TestTestIt(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	all, l, err := lessons.LoadOne(22)
	if err != nil {
		t.Fatal(err)
	}
	// What each step's check says of the project before its fix.
	before := []string{
		"✗ TestEchoCRDInstalled: fails: echo_controller_test.go",
		"✗ TestReconcileMakesDeployment: fails: echo_controller_test.go",
		"✗ TestDeletedEchoDeploymentCollected: fails: echo_controller_test.go",
	}
	why := []string{"no client: TestMain started no control plane (step 1)", "TODO(lesson 22, step 2)", "TODO(lesson 22, step 3)"}
	if len(l.Steps) != len(before) {
		t.Fatalf("lesson 22 has %d steps, the test knows %d", len(l.Steps), len(before))
	}
	sb := startOperator(t, sandbox.Custom{Name: l.Operator.Name, Project: l.Operator.Starter.Files})
	d := state.Dir{Root: t.TempDir()}
	prog, err := runner.LoadProgress(d)
	if err != nil {
		t.Fatal(err)
	}
	p := runner.NewPlayer(sb)
	defer p.Close()
	s := runner.NewSession(t.Context(), p, all, l, 0, prog, func(pr *runner.Progress) error { return pr.Save(d) })
	defer s.Close()
	// A go test run builds the project first: on a busy machine, minutes.
	wait := func(what string, cond func(runner.SessionState) bool) runner.SessionState {
		t.Helper()
		var st runner.SessionState
		simtest.Eventually(t, 5*time.Minute, what, func(context.Context) (bool, error) {
			st = s.State()
			return cond(st), fmt.Errorf("state %+v", st)
		})
		return st
	}
	for i := range l.Steps {
		t0 := time.Now()
		if i > 0 {
			s.Next()
		}
		st := wait(fmt.Sprintf("step %d failing", i+1), func(st runner.SessionState) bool {
			return st.Step == i && strings.Contains(st.Detail, before[i])
		})
		if st.Passed || !strings.Contains(st.Detail, why[i]) {
			t.Errorf("step %d before its fix: passed %v, detail %q; want a failure quoting %q", i+1, st.Passed, st.Detail, why[i])
		}
		t.Logf("step %d failing after %.1fs: %s", i+1, time.Since(t0).Seconds(), strings.ReplaceAll(st.Detail, "\n", " | "))
		s.Play()
		st = wait(fmt.Sprintf("step %d passed", i+1), func(st runner.SessionState) bool { return st.Passed })
		if st.PlayErr != "" || st.Step != i {
			t.Errorf("step %d: %+v", i+1, st)
		}
		t.Logf("step %d passed after %.1fs: %s", i+1, time.Since(t0).Seconds(), st.Detail)
	}
	if st := s.State(); !st.Done {
		t.Errorf("after the last step: %+v, want done", st)
	}
}
