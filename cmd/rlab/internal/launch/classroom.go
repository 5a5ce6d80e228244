package launch

import (
	"context"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/sim/feature/classroom"
	"github.com/kkloud/rlab/sim/sandbox"
)

// startReporter starts, on a classroom, the reporter that writes the
// student's progress for the instructor. Without one the sandbox runs as
// before: r.Note says why. Called with l.mu held.
func (l *Launcher) startReporter(ctx context.Context, sb *sandbox.Sandbox, r Report) {
	user, ok := sb.Cluster().ExistingUser()
	if !ok {
		return
	}
	student, ok := classroom.StudentOf(user)
	if !ok {
		return
	}
	rep, err := classroom.NewReporter(ctx, sb.Cluster().Config(), student, l.log)
	if err != nil {
		l.log.Warn("progress will not reach the instructor", "err", err)
		if r.Note != nil {
			r.Note("progress will not reach the instructor: " + err.Error())
		}
		return
	}
	l.reporter = rep
}

// Tell has p report the student's progress, over the lessons of course, to
// the instructor, if on a classroom.
func (l *Launcher) Tell(p *runner.Player, course []*lessons.Lesson) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reporter != nil {
		p.Report = runner.ReportTo(l.reporter, course)
	}
}

// OnReset runs the instructor's reset requests with run, one at a time
// until ctx ends or the launcher stops, and reports each one done once run
// returned nil. Without a classroom there are none.
func (l *Launcher) OnReset(ctx context.Context, run func(ctx context.Context, lesson int) error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reporter != nil {
		l.onReset(ctx, l.reporter, run)
	}
}

// onReset is OnReset; Stop ends it, and waits, before the session and the
// reporter close. Called with l.mu held.
func (l *Launcher) onReset(ctx context.Context, rep *classroom.Reporter, run func(ctx context.Context, lesson int) error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	l.resetStops = append(l.resetStops, func() { cancel(); <-done })
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case req := <-rep.Resets():
				if err := run(ctx, req.Lesson); err != nil {
					l.log.Warn("the instructor's reset", "lesson", req.Lesson, "err", err)
					continue
				}
				rep.ResetDone(req.ID)
			}
		}
	}()
}
