package e2e

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/sim/feature/check"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/lessonpanel"
)

// TestWriteYourOwn follows lesson 12 as the screen does, on a sandbox that
// runs only the lesson's starter: before each fix, the checks its step runs
// fail on the operator as it is, each with rlab check's reason, and the
// lesson panel shows them; then a swaps in the fix and the step passes. So
// the starter really lacks what the lesson says, one thing a step. It runs
// beside the lesson verifications.
func TestWriteYourOwn(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	all, l, err := lessons.LoadOne(12)
	if err != nil {
		t.Fatal(err)
	}
	// What each check says of the version before its step's fix; a check
	// not listed passes on it (create-once does put back a deleted
	// Deployment).
	reasons := map[string]string{
		"status":       `status.ready is ""`,
		"scale":        "asks for 4",
		"drift-scaled": "before the hand scale",
		"owner":        "has no ownerReference",
		"gc":           "no controller ownerReference",
		"quoting":      "no Deployment echo-check-quotes",
	}
	sb := startOperator(t, sandbox.Custom{Name: l.Operator.Name, Script: l.Operator.Starter.Data})
	d := state.Dir{Root: t.TempDir()}
	prog, err := runner.LoadProgress(d)
	if err != nil {
		t.Fatal(err)
	}
	p := runner.NewPlayer(sb)
	defer p.Close()
	s := runner.NewSession(t.Context(), p, all, l, 0, prog, func(pr *runner.Progress) error { return pr.Save(d) })
	defer s.Close()
	styles := common.NewTheme(true)

	for i, step := range l.Steps {
		t0 := time.Now()
		if i > 0 {
			s.Next()
		}
		if step.Action != nil && len(step.Action.Play) > 0 {
			var fails []string
			for _, id := range step.Check.Conds[0].Args.List("checks") {
				if _, ok := reasons[id]; ok {
					fails = append(fails, id)
				}
			}
			if len(fails) == 0 {
				t.Fatalf("step %d fixes something, and no check of it fails before", i+1)
			}
			st := waitState(t, s, "step "+step.Title+" failing", func(st runner.SessionState) bool {
				for _, id := range fails {
					if !strings.Contains(st.Detail, "✗ "+id+": ") {
						return false
					}
				}
				return true
			})
			for _, id := range step.Check.Conds[0].Args.List("checks") {
				want, fail := reasons[id]
				switch {
				case fail && !strings.Contains(st.Detail, want):
					t.Errorf("step %d: %s fails, but not with %q:\n%s", i+1, id, want, st.Detail)
				case !fail && strings.Contains(st.Detail, "✗ "+id+": "):
					t.Errorf("step %d: %s fails before the fix:\n%s", i+1, id, st.Detail)
				}
			}
			ids := fails
			if st.Passed || !strings.Contains(st.Detail, "its log: ") {
				t.Errorf("step %d failing: %+v", i+1, st)
			}
			panel := strings.Join(lessonpanel.New(st, 100, styles).Render(40), "\n")
			if !strings.Contains(panel, "✗ "+ids[0]+": ") {
				t.Errorf("step %d: the panel does not show the failing check %s:\n%s", i+1, ids[0], panel)
			}
			t.Logf("step %d failing after %.1fs: %s", i+1, time.Since(t0).Seconds(), strings.ReplaceAll(st.Detail, "\n", " | "))
			s.Play()
		}
		st := waitState(t, s, "step "+step.Title+" passed", func(st runner.SessionState) bool { return st.Passed })
		if st.PlayErr != "" || st.Step != i {
			t.Errorf("step %d: %+v", i+1, st)
		}
		t.Logf("step %d passed after %.1fs: %s", i+1, time.Since(t0).Seconds(), st.Detail)
	}
	if st := s.State(); !st.Done {
		t.Errorf("after the last step: %+v, want done", st)
	}
	// The lesson leaves the sample as it found it (the checks scale it).
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if why, err := p.AwaitBaseline(ctx); err != nil {
		t.Errorf("baseline after the lesson: %s", why)
	}
	// drift-scaled alone, with the sample at its 2 replicas (not the 4 the
	// scale check leaves): a lesson may run any check by itself.
	rec := check.NewRequestLog(sb.Bus(), l.Operator.Name)
	res, err := check.Run(ctx, check.Sandbox(sb), rec, check.Options{Operator: l.Operator.Name, Only: []string{check.DriftScaled}, Within: 20 * time.Second})
	rec.Close()
	if err != nil || len(res) != 1 || !res[0].Pass || !strings.Contains(res[0].Reason, "back to 2 replicas") {
		t.Errorf("drift-scaled alone: %+v, %v", res, err)
	}
	// Restore puts the starter back.
	pid := func() int {
		for _, r := range sb.Operators().ReplicaStatuses() {
			if r.Style == l.Operator.Name && r.Running {
				return r.PID
			}
		}
		return 0
	}
	before := pid()
	rec = check.NewRequestLog(sb.Bus(), l.Operator.Name)
	defer rec.Close()
	if err := p.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, 30*time.Second, "the starter restarted", simtest.True(func() bool { return pid() != 0 && pid() != before }))
	restored := time.Now()
	want, err := l.Version(0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sb.Customs().CustomCommand(l.Operator.Name)
	if err != nil || !strings.HasSuffix(got, "starter.sh'") {
		t.Fatalf("after Restore it runs %q (%v), want the starter %s", got, err, want.Name)
	}
	// Saved, the student's file runs again as the new version.
	script := strings.TrimSuffix(strings.TrimPrefix(got, "bash '"), "'")
	// Its first request comes after it read its file: it runs.
	simtest.Eventually(t, 30*time.Second, "the starter polls", simtest.True(func() bool {
		for _, q := range rec.Requests(restored) {
			if q.Key() == "list echoes" {
				return true
			}
		}
		return false
	}))
	edited := append(slices.Clone(want.Data), "# edited\n"...)
	if err := os.WriteFile(script, edited, 0o700); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, 30*time.Second, "the edited starter runs again", simtest.True(func() bool {
		b, _ := os.ReadFile(sb.Operators().LogFile(l.Operator.Name, "a"))
		return strings.Contains(string(b), script+" changed: running it again")
	}))
}

// startOperator starts a sandbox that runs only the custom operator c, with
// the sample Echo, stopped when the test ends. It does not wait for the
// sample: a starter never reports it ready.
func startOperator(t *testing.T, c sandbox.Custom) *sandbox.Sandbox {
	t.Helper()
	sb, _ := startWith(t, sandbox.Options{Custom: []sandbox.Custom{c}, Sample: true})
	return sb
}
