package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
)

// waitState polls the session until cond holds, or fails after a generous
// deadline.
func waitState(t *testing.T, s *lessons.Session, what string, cond func(lessons.SessionState) bool) lessons.SessionState {
	t.Helper()
	var st lessons.SessionState
	simtest.Eventually(t, 2*time.Minute, what, func(context.Context) (bool, error) {
		st = s.State()
		return cond(st), fmt.Errorf("state %+v", st)
	})
	return st
}

// TestSession follows lesson 2 as the screen does: the check runs live,
// play performs the action, progress is saved as steps pass, and moving
// between steps and lessons shows the right step.
func TestSession(t *testing.T) {
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	l, err := lessons.Find(all, 2)
	if err != nil {
		t.Fatal(err)
	}
	d := state.Dir{Root: t.TempDir()}
	prog, err := lessons.LoadProgress(d)
	if err != nil {
		t.Fatal(err)
	}
	sb := startSandbox(t)
	p := lessons.NewPlayer(sb)
	defer p.Close()
	s := lessons.NewSession(t.Context(), p, all, l, 0, prog, func(pr *lessons.Progress) error { return pr.Save(d) })
	defer s.Close()
	saved := func() lessons.LessonProgress {
		t.Helper()
		pr, err := lessons.LoadProgress(d)
		if err != nil {
			t.Fatal(err)
		}
		return pr.Of(l)
	}

	// The first step opens once the sandbox is at its baseline (the Go
	// styles led), not before: the operators' start-up is no step's.
	st := waitState(t, s, "the first step opens", func(st lessons.SessionState) bool {
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

	s.Play()
	st = waitState(t, s, "step 1 played and passed", func(st lessons.SessionState) bool { return st.Passed })
	if st.Step != 0 || st.Playing || st.PlayErr != "" || !strings.Contains(st.Detail, "replicas 4") {
		t.Errorf("after play: %+v", st)
	}
	if got := saved(); got.Step != 1 || got.Done {
		t.Errorf("progress after step 1 = %+v, want next step 1, not done", got)
	}

	v := s.State().Version
	s.Back() // at the first step: try it again, from a clean window
	if st := s.State(); st.Step != 0 || st.Version == v || st.Passed {
		t.Errorf("back at step 1 did not try it again: %+v", st)
	}
	s.Play()
	st = waitState(t, s, "step 1 played again and passed", func(st lessons.SessionState) bool { return st.Passed })
	v = st.Version
	s.Next()
	st = s.State()
	if st.Step != 1 || st.Passed || st.Version <= v || st.StepTitle != l.Steps[1].Title {
		t.Fatalf("next: %+v", st)
	}
	s.Play()
	st = waitState(t, s, "last step played and passed", func(st lessons.SessionState) bool { return st.Passed })
	if !st.Done || st.Step != 1 {
		t.Errorf("after the last step: %+v, want done", st)
	}
	if got := saved(); !got.Done {
		t.Errorf("progress after the last step = %+v, want done", got)
	}
	var entry lessons.SessionEntry
	for _, e := range s.Lessons() {
		if e.Number == 2 {
			entry = e
		}
	}
	if entry.Where != "done" || entry.Title != l.Title || entry.Steps != len(l.Steps) {
		t.Errorf("lesson list entry = %+v, want lesson 2 done", entry)
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
}
