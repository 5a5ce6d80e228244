package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/feature/classroom"
)

// Report is told where the student is, and how their lessons went,
// whenever either changes: on a classroom, their progress ConfigMap
// (classroom.Reporter, through ReportTo). It must return at once: a
// session calls it with its lock held.
type Report func(now *classroom.Position, prog *Progress)

// ReportTo is a Report to r of the lessons of course.
func ReportTo(r interface {
	Set(*classroom.Position, []classroom.LessonRecord)
}, course []*lessons.Lesson) Report {
	return func(now *classroom.Position, prog *Progress) { r.Set(now, prog.Records(course)) }
}

// Records are how the student's lessons went, in course order, for the
// instructor: every lesson of all the student started.
func (p *Progress) Records(all []*lessons.Lesson) []classroom.LessonRecord {
	var out []classroom.LessonRecord
	for _, l := range all {
		lp := p.Lessons[l.Dir]
		if lp == nil {
			continue
		}
		r := classroom.LessonRecord{Number: l.Number, Steps: len(l.Steps), Next: lp.Step, Done: lp.Done}
		for _, h := range lp.How {
			r.How = append(r.How, string(h))
		}
		for i, pr := range lp.Predictions {
			if r.Predictions == nil {
				r.Predictions = map[int]classroom.Prediction{}
			}
			r.Predictions[i+1] = classroom.Prediction{Choice: pr.Choice, Right: pr.Right, Measured: pr.Measured}
		}
		out = append(out, r)
	}
	return out
}

// position is where a student on step i of l stands, for the instructor.
func position(l *lessons.Lesson, i int, since time.Time, st SessionState, local func(string) string) *classroom.Position {
	pos := &classroom.Position{
		Lesson: l.Number, Title: l.Title, Step: i + 1, Steps: len(l.Steps), Since: since,
		Passed: st.Passed, Done: st.Done, Reason: st.Detail, Error: st.PlayErr,
	}
	if i < len(l.Steps) {
		s := &l.Steps[i]
		pos.StepTitle = s.Title
		if s.Check != nil {
			pos.Waits = local(strings.TrimSpace(l.Waits(i)))
		}
	}
	return pos
}

// Forget drops how lesson l went: started again from step 1 after a reset,
// it is a new attempt.
func (p *Progress) Forget(l *lessons.Lesson, now time.Time) {
	p.Lessons[l.Dir] = &LessonProgress{Updated: now}
}

// SameSandbox says whether lesson o runs in the sandbox started for l: a
// lesson about the student's own operator needs a sandbox with it.
func SameSandbox(l, o *lessons.Lesson) bool {
	return l.Operator == nil && o.Operator == nil || l == o
}

// CanReset says why lesson n cannot start again in the sandbox lesson l
// was started for ("" if it can): it needs an operator of its own, or runs
// on other backends.
func (p *Player) CanReset(l, n *lessons.Lesson) string {
	if why := n.NotOn(p.sb.Cluster().Type().Name); why != "" {
		return why
	}
	if !SameSandbox(l, n) {
		return fmt.Sprintf("lesson %d runs with an operator of its own: quit, then rlab lesson start %d --reset", n.Number, n.Number)
	}
	return ""
}

// ResetError ends Guide when the student (r) or their instructor asks to
// start lesson Lesson again from the sandbox's baseline; the caller
// restores the sandbox (Player.Restore) and guides that lesson from step 1.
type ResetError struct {
	Lesson int
	Asked  bool // by the instructor (CmdResetAsked), not the student
}

func (e *ResetError) Error() string { return fmt.Sprintf("reset to lesson %d", e.Lesson) }

// Reset brings the sandbox back to its baseline (Player.Restore: the
// operators, their switches and faults, the Echoes) and opens lesson n at
// step 1, how it went before forgotten: a lost student starts it again, or
// their instructor sends them there. The lesson must run in this sandbox.
func (s *Session) Reset(ctx context.Context, n int) error {
	l, err := lessons.Find(s.all, n)
	if err != nil {
		return err
	}
	s.mu.Lock()
	switch why := s.p.CanReset(s.first, l); {
	case s.closed || s.resetting:
		s.mu.Unlock()
		return errors.New("the session is closed, or already resetting")
	case why != "":
		s.st.PlayErr = why // the student sees why nothing happened
		s.changed()
		s.mu.Unlock()
		return errors.New(why)
	}
	// No key acts meanwhile (resetting), and no watcher of the step shown
	// before outlives it (stop).
	s.stop()
	s.resetting = true
	s.st.Waiting, s.st.Detail, s.st.PlayErr = s.st.Words.F("resetting the sandbox for lesson %d", n), "", ""
	s.changed()
	s.mu.Unlock()
	rerr := s.p.Restore(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetting = false
	if s.closed {
		return errors.New("the session closed during the reset")
	}
	s.stop()
	s.failed, s.autoplayed = nil, false
	s.prog.Forget(l, time.Now())
	s.starting(l, 0) // shown once the baseline holds again
	if rerr != nil {
		s.st.PlayErr = "reset: " + rerr.Error()
		s.changed()
		return fmt.Errorf("reset to lesson %d: %w", n, rerr)
	}
	return nil
}
