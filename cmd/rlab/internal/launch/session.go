package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/tui"
)

// Follow is a lesson followed on the screen.
type Follow struct {
	Lesson    *lessons.Lesson
	Course    []*lessons.Lesson // every lesson, for the screen's list
	FromStart bool              // at step 1, not where the student got to
	// Reset brings the sandbox back to its baseline first and forgets how
	// the lesson went: a new attempt (rlab lesson start N --reset).
	Reset bool
}

// follow makes the Session of a lesson, resuming where the student got to.
func (l *Launcher) follow(ctx context.Context, f *Follow) error {
	prog, from, err := Resume(l.Dir, f.Lesson, f.FromStart || f.Reset)
	if err != nil {
		return err
	}
	p := runner.NewPlayer(l.sb)
	if f.Reset {
		if err := p.Restore(ctx); err != nil {
			p.Close()
			return fmt.Errorf("reset the sandbox for lesson %d: %w", f.Lesson.Number, err)
		}
		prog.Forget(f.Lesson, time.Now())
	}
	if l.reporter != nil {
		p.Report = runner.ReportTo(l.reporter, f.Course)
	}
	s := runner.NewSession(ctx, p, f.Course, f.Lesson, from, prog, func(pr *runner.Progress) error { return pr.Save(l.Dir) })
	l.session, l.sessionStop = s, func() { s.Close(); p.Close() }
	if l.reporter != nil {
		l.onReset(ctx, l.reporter, s.Reset)
	}
	return nil
}

// Resume loads the student's progress and the step lesson l resumes at:
// where they got to, or the first with fromStart.
func Resume(d state.Dir, l *lessons.Lesson, fromStart bool) (*runner.Progress, int, error) {
	prog, err := runner.LoadProgress(d)
	if err != nil {
		return nil, 0, err
	}
	if fromStart {
		return prog, 0, nil
	}
	return prog, prog.Resume(l), nil
}

// A lesson session is what the screen follows.
var _ tui.Session = (*runner.Session)(nil)
