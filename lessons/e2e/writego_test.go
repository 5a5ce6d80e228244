package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
)

// TestWriteYourOwnGo follows lesson 20 from step 8, the steps the student
// writes, on a sandbox that runs the project as step 7 leaves it: what
// those steps ask must fail on it. A status written by hand is written
// back at once (no predicate yet: step 12's check could not pass), and
// step 8's check fails, saying which finalizer is missing; then the
// lesson's versions go in and each step passes, step 12 holding the wrong
// status. Step 13 fails on step 12's version run as two replicas electing
// a leader, quoting the manager's error, then passes with the lesson's.
// It runs beside the lesson verifications.
func TestWriteYourOwnGo(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	all, l, err := lessons.LoadOne(20)
	if err != nil {
		t.Fatal(err)
	}
	const first = 7              // step 8, from 0
	lastStep := len(l.Steps) - 1 // 13: two replicas, one leader
	step7, err := l.Version(first - 1)
	if err != nil {
		t.Fatal(err)
	}
	sb := startOperator(t, sandbox.Custom{Name: l.Operator.Name, Project: step7.Files})
	d := state.Dir{Root: t.TempDir()}
	prog, err := runner.LoadProgress(d)
	if err != nil {
		t.Fatal(err)
	}
	p := runner.NewPlayer(sb)
	defer p.Close()
	// go run builds the project first: on a busy machine, minutes.
	ready := func() string {
		u, err := sb.Student().Echoes(l.Operator.Name).Get(t.Context(), "hello", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		r, _, _ := unstructured.NestedString(u.Object, "status", "ready")
		return r
	}
	simtest.Eventually(t, 5*time.Minute, "hello 2/2 by step 7's version", func(context.Context) (bool, error) {
		r := ready()
		return r == "2/2", fmt.Errorf("status.ready %q", r)
	})
	// Without the predicate, the status written by hand comes back as an
	// update of the Echo, which is queued: the operator writes 2/2 again.
	set := lessons.Op{Name: "set_status", Args: lessons.Args{"operator": string(l.Operator.Name), "name": "hello", "ready": "0/2"}}
	if err := p.Do(t.Context(), set); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	simtest.Eventually(t, 10*time.Second, "the status written back without the predicate", func(context.Context) (bool, error) {
		r := ready()
		return r == "2/2", fmt.Errorf("status.ready %q", r)
	})
	t.Logf("without the predicate, 0/2 was written back to 2/2 in %.1fs", time.Since(t0).Seconds())

	s := runner.NewSession(t.Context(), p, all, l, first, prog, func(pr *runner.Progress) error { return pr.Save(d) })
	defer s.Close()
	wait := func(what string, cond func(runner.SessionState) bool) runner.SessionState {
		t.Helper()
		var st runner.SessionState
		simtest.Eventually(t, 5*time.Minute, what, func(context.Context) (bool, error) {
			st = s.State()
			return cond(st), fmt.Errorf("state %+v", st)
		})
		return st
	}
	st := wait("step 8 failing on step 7's version", func(st runner.SessionState) bool {
		return st.Step == first && strings.Contains(st.Detail, "has_finalizer: mine finalizers []")
	})
	if st.Passed {
		t.Fatalf("step 8 passed on step 7's version: %s", st.Detail)
	}
	for i := first; i < len(l.Steps); i++ {
		t0 := time.Now()
		if i > first {
			s.Next()
		}
		if i == lastStep {
			twoReplicasFail(t, p, s, l, i)
		}
		s.Play()
		st := wait(fmt.Sprintf("step %d passed", i+1), func(st runner.SessionState) bool { return st.Step == i && st.Passed })
		if st.PlayErr != "" {
			t.Errorf("step %d: %+v", i+1, st)
		}
		t.Logf("step %d passed after %.1fs: %s", i+1, time.Since(t0).Seconds(), st.Detail)
		if r := ready(); i == lastStep-1 && r != "0/2" {
			t.Errorf("with the predicate, hello's status.ready is %q after step 12, want the 0/2 written by hand", r)
		}
	}
}

// twoReplicasFail: step 13 on step 12's version, run as two replicas with
// --leader-elect as the step's command does, fails, quoting the manager's
// own error: out of a cluster it cannot find the Lease's namespace.
func twoReplicasFail(t *testing.T, p *runner.Player, s *runner.Session, l *lessons.Lesson, i int) {
	t.Helper()
	two := lessons.Op{Name: lessons.ActReplicas, Args: lessons.Args{"operator": string(l.Operator.Name), "replicas": 2, "args": "--leader-elect"}}
	if err := p.Do(t.Context(), two); err != nil {
		t.Fatal(err)
	}
	const why = "unable to find leader election namespace"
	var st runner.SessionState
	simtest.Eventually(t, 5*time.Minute, "step 13 failing on step 12's version, saying why", func(context.Context) (bool, error) {
		st = s.State()
		return st.Step == i && strings.Contains(st.Detail, why), fmt.Errorf("state %+v", st)
	})
	if st.Passed {
		t.Fatalf("step 13 passed on step 12's version: %s", st.Detail)
	}
	t.Logf("step 13 on step 12's version: %s", st.Detail)
}
