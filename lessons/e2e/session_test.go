package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
)

// waitState polls the session until cond holds, or fails after a generous
// deadline.
func waitState(t *testing.T, s *runner.Session, what string, cond func(runner.SessionState) bool) runner.SessionState {
	t.Helper()
	var st runner.SessionState
	simtest.Eventually(t, 2*time.Minute, what, func(context.Context) (bool, error) {
		st = s.State()
		return cond(st), fmt.Errorf("state %+v", st)
	})
	return st
}

// TestSession follows lesson 2 as the screen does: the check runs live,
// the step's key and play perform the action, progress is saved as steps
// pass with how each went (the key by hand, play played, a step reread
// and left keeps its pass), and moving between steps and lessons shows the
// right step.
func TestSession(t *testing.T) {
	simtest.NeedsControlPlane(t)
	all, l, err := lessons.LoadOne(2)
	if err != nil {
		t.Fatal(err)
	}
	d := state.Dir{Root: t.TempDir()}
	prog, err := runner.LoadProgress(d)
	if err != nil {
		t.Fatal(err)
	}
	sb := startSandbox(t)
	p := runner.NewPlayer(sb)
	defer p.Close()
	s := runner.NewSession(t.Context(), p, all, l, 0, prog, func(pr *runner.Progress) error { return pr.Save(d) })
	defer s.Close()
	saved := func() runner.LessonProgress {
		t.Helper()
		pr, err := runner.LoadProgress(d)
		if err != nil {
			t.Fatal(err)
		}
		return pr.Of(l)
	}

	// The first step opens once the sandbox is at its baseline (the Go
	// styles led), not before: the operators' start-up is no step's.
	st := waitState(t, s, "the first step opens", func(st runner.SessionState) bool {
		return !strings.HasPrefix(st.Waiting, "the sandbox to start")
	})
	if st.Lesson != 2 || st.Count != len(all) || st.Step != 0 || st.Steps != len(l.Steps) || st.Waiting == "" || st.Passed ||
		!strings.Contains(st.Kubectl, "replicas") || st.Key != "+" {
		t.Fatalf("first step shown as %+v", st)
	}
	// Nothing happens by itself: the check waits for the student's act.
	simtest.Eventually(t, 10*time.Second, "the check waiting for the act", func(context.Context) (bool, error) {
		st = s.State()
		return st.Detail == "waiting for you to act", fmt.Errorf("state %+v", st)
	})
	if st = s.State(); st.Passed {
		t.Fatalf("passed before anyone acted: %+v", st)
	}

	// The key the step names is the student's own act.
	if !s.Key() {
		t.Fatalf("step 1's key %q did nothing", st.Key)
	}
	st = waitState(t, s, "step 1 done with its key and passed", func(st runner.SessionState) bool { return st.Passed })
	if st.Step != 0 || st.Playing || st.PlayErr != "" || !strings.Contains(st.Detail, "replicas 4") {
		t.Errorf("after the key: %+v", st)
	}
	if got := saved(); got.Step != 1 || got.Done || len(got.How) != 2 || got.How[0] != runner.ByHand {
		t.Errorf("progress after step 1 = %+v, want next step 1, not done, step 1 by hand", got)
	}

	v := s.State().Version
	s.Back() // at the first step: try it again, from a clean window
	if st := s.State(); st.Step != 0 || st.Passed || st.Version <= v {
		t.Errorf("back at step 1: %+v, want step 1 again, not passed", st)
	}
	s.Next() // reread and left: not a skip, its pass stands
	st = s.State()
	if st.Step != 1 || st.Passed || st.Version <= v || st.StepTitle != l.Steps[1].Title {
		t.Fatalf("next: %+v", st)
	}
	s.Play()
	st = waitState(t, s, "last step played and passed", func(st runner.SessionState) bool { return st.Passed })
	if !st.Done || st.Step != 1 {
		t.Errorf("after the last step: %+v, want done", st)
	}
	if got := saved(); !got.Done || len(got.How) != 2 || got.How[0] != runner.ByHand || got.How[1] != runner.Played {
		t.Errorf("progress after the last step = %+v, want done, by hand then played", got)
	}
	var entry runner.SessionEntry
	for _, e := range s.Lessons() {
		if e.Number == 2 {
			entry = e
		}
	}
	if entry.Where != "1/2, 1 played" || !entry.Done || entry.Title != l.Title || entry.Steps != len(l.Steps) {
		t.Errorf("lesson list entry = %+v, want lesson 2 done: 1/2, 1 played", entry)
	}

	if err := s.Open(99); err == nil {
		t.Error("Open(99) = nil, want an error naming the lessons there are")
	}
	if err := s.Open(1); err != nil {
		t.Fatal(err)
	}
	if st := s.State(); st.Lesson != 1 || st.Step != 0 || st.Done || st.Passed {
		t.Errorf("after Open(1): %+v", st)
	}
	// Lesson 1's first step only asks to look: it passes by itself, by
	// hand. n on the second, before anyone acted, is a skip.
	waitState(t, s, "lesson 1, step 1 passed", func(st runner.SessionState) bool { return st.Passed })
	s.Next()
	s.Next()
	l1, err := lessons.Find(all, 1)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := runner.LoadProgress(d)
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Of(l1); got.Step != 2 || len(got.How) < 2 || got.How[0] != runner.ByHand || got.How[1] != runner.Skipped {
		t.Errorf("lesson 1 after n = %+v, want step 1 by hand, step 2 skipped", got)
	}
	if got := pr.Where(l1); got != "step 3 of "+fmt.Sprint(len(l1.Steps)) {
		t.Errorf("lesson 1 listed as %q", got)
	}
}
