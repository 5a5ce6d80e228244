package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/checks"
	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/marks"
	"github.com/kkloud/rlab/sim/sandbox"
)

// Session is a lesson followed on the screen: it shows one step at a
// time, evaluates its check live in the background, and moves when the
// student says so. Every method returns at once; what it starts shows up in
// State, whose Version changes with every change. Close it when done.
type Session struct {
	p    *Player
	all  []*lessons.Lesson
	prog *Progress
	// save writes the progress; called with the session's lock held, so it
	// must not call back into the Session.
	save func(*Progress) error
	ctx  context.Context

	mu     sync.Mutex
	l      *lessons.Lesson
	st     SessionState
	cancel context.CancelFunc // the current step's watcher
	gen    int                // bumped on every step change: stale watchers keep quiet
	began  time.Time
	since  time.Time // when the current step was shown
	hold   map[style.Style]string
	ready  bool // a step was shown: the sandbox had started
	// autoplayed: a (not the step's key) acted on this step, so its pass
	// is autoplay's, not the student's.
	autoplayed bool
	// failed is why the step can no longer pass (its Detail says it too).
	failed error
	// first is the lesson the sandbox was started for: what a reset may
	// switch to depends on it, not on the lesson open now.
	first *lessons.Lesson
	// resetting: a reset is bringing the sandbox back; the keys wait.
	resetting bool
	closed    bool
}

// SessionState is what the lesson panel shows of a Session; the screen
// reads it from the view package, which has none of the engine's imports.
type SessionState = lessonview.State

// SessionEntry is one lesson of the list.
type SessionEntry = lessonview.Entry

// NewSession starts lesson l at step from (clamped) on p. save is called
// whenever prog changed; its error is shown on the panel.
func NewSession(ctx context.Context, p *Player, all []*lessons.Lesson, l *lessons.Lesson, from int, prog *Progress, save func(*Progress) error) *Session {
	// A student reads the check's detail; four evaluations a second are
	// plenty, and each takes a snapshot of the world.
	p.Poll = max(p.Poll, 250*time.Millisecond)
	s := &Session{p: p, all: all, prog: prog, save: save, ctx: ctx, first: l}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starting(l, from)
	return s
}

// starting shows step from of l while the sandbox starts, and opens it
// once the sandbox is at its baseline: the operators' start-up (their first
// lists, the first election) is not the student's act, and a step's window
// must not hold it. Called with the lock held.
func (s *Session) starting(l *lessons.Lesson, from int) {
	s.l = l
	i := min(max(from, 0), len(l.Steps)-1)
	s.since = time.Now()
	s.st = s.stateOf(i)
	s.st.Waiting = s.st.Words.F("the sandbox to start: every style's Echo %s ready, the Go styles led", sandbox.SampleName)
	s.changed()
	ctx, cancel := context.WithCancel(s.ctx)
	s.cancel = cancel
	gen := s.gen
	go func() {
		_, err := s.p.awaitBaseline(ctx, func(why string) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if d := s.st.Words.T("starting: ") + why; gen == s.gen && s.st.Detail != d {
				s.st.Detail = d
				s.changed()
			}
		})
		s.mu.Lock()
		defer s.mu.Unlock()
		if gen != s.gen || err != nil {
			return // the student moved, or the session ended
		}
		s.show(i)
	}()
}

// Close stops the current step's watcher.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
	s.gen++
	s.closed = true
}

// opened says whether step i is shown and its check watched: the sandbox
// has started, and the student is on it. A last step may be done already:
// a check that passes as it opens (lesson 14's last, when the loop took
// the field back first) ends the lesson before anyone looks.
func (s *Session) opened(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready && s.st.Step == i
}

// outcome is where the current step's check stands: passed, failed for
// good (why), and its detail.
func (s *Session) outcome() (passed bool, failed error, detail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Passed, s.failed, s.st.Detail
}

// State is the lesson as it stands now.
func (s *Session) State() SessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// Next goes to the next step without waiting for the check; past the
// last step the lesson is done.
func (s *Session) Next() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resetting {
		return
	}
	if how, ok := leftHow(&s.l.Steps[s.st.Step], s.st.Passed, s.autoplayed); ok && !s.st.Done {
		s.prog.Record(s.l, s.st.Step, how, time.Now()) // saved as the step changes
	}
	if s.st.Step+1 >= len(s.l.Steps) {
		s.finish()
		return
	}
	s.show(s.st.Step + 1)
}

// Back goes to the previous step, or tries the first one again.
func (s *Session) Back() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resetting {
		return
	}
	if s.st.Done {
		s.show(len(s.l.Steps) - 1)
		return
	}
	// On the first step, b tries it again from a clean window.
	s.show(max(s.st.Step-1, 0))
}

// Play performs this step's action, then checks again, measured from the
// end of the action.
func (s *Session) Play() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.play(trace.ViaPlay)
}

// Key performs this step's action because the student pressed the key it
// names: the same action, on every style the step names.
func (s *Session) Key() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	step := &s.l.Steps[s.st.Step]
	if step.Action == nil || step.Action.Key == "" || len(step.Action.Play) == 0 {
		return false
	}
	s.play(trace.ViaKey)
	return true
}

// Predict answers the step's question with choice (from 1): before the
// student acts, so not once the step plays or passed. The answer can change
// until then.
func (s *Session) Predict(choice int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.st.Done || s.st.Passed:
		return errors.New("the step passed already: a prediction comes before the act")
	case s.st.Playing:
		return errors.New("the step is playing: a prediction comes before the act")
	}
	pr, err := s.l.Steps[s.st.Step].Predict.Choose(choice)
	if err != nil {
		return err
	}
	s.st.Predicted = pr
	s.changed()
	return nil
}

// play performs the step's action; via says who asked: autoplay (a,
// trace.ViaPlay) or the step's key (trace.ViaKey). Called with the lock
// held.
func (s *Session) play(via string) {
	step := &s.l.Steps[s.st.Step]
	switch {
	case s.st.Done || s.st.Playing:
		return
	case !s.ready || s.resetting:
		s.st.PlayErr = s.st.Words.T("the sandbox is still starting")
		s.changed()
		return
	case step.Action == nil || len(step.Action.Play) == 0:
		s.st.PlayErr = s.st.Words.T("nothing to play in this step")
		s.changed()
		return
	}
	s.st.Playing, s.st.PlayErr = true, ""
	s.autoplayed = s.autoplayed || via == trace.ViaPlay
	s.changed()
	// A clean window: what the student did before is not the play's.
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	s.began, s.hold = s.p.Begin()
	gen, ops := s.gen, step.Action.Play
	go func() {
		var err error
		for _, op := range ops {
			if err = s.p.DoVia(s.ctx, op, via); err != nil {
				err = fmt.Errorf("%s: %w", op.Name, err)
				break
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if gen != s.gen {
			return // the student moved on meanwhile
		}
		s.st.Playing = false
		if err != nil {
			s.st.PlayErr = err.Error()
		}
		s.changed()
		if !s.st.Passed {
			s.watch(time.Now())
		}
	}()
}

// Open switches to lesson n, at the step the student got to before (the
// first step of a lesson already done).
func (s *Session) Open(n int) error {
	l, err := lessons.Find(s.all, n)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resetting {
		return errors.New("the sandbox is being reset")
	}
	s.open(l, s.prog.Resume(l))
	return nil
}

// Lessons lists the course with the student's progress.
func (s *Session) Lessons() []SessionEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SessionEntry, 0, len(s.all))
	for _, l := range s.all {
		out = append(out, SessionEntry{Number: l.Number, Title: l.Title, Steps: len(l.Steps), Where: s.prog.Listed(l), Done: s.prog.Of(l).Done})
	}
	return out
}

// open shows lesson l from step from. Called with the lock held.
func (s *Session) open(l *lessons.Lesson, from int) {
	s.l = l
	s.show(min(max(from, 0), len(l.Steps)-1))
}

// changed bumps the version, and tells the instructor. Called with the
// lock held.
func (s *Session) changed() {
	s.st.Version++
	s.tell()
}

// tell tells the instructor where the student is, if anyone listens.
// Called with the lock held.
func (s *Session) tell() {
	if s.p == nil || s.p.Report == nil {
		return
	}
	pos := position(s.l, s.st.Step, s.since, s.st, s.local)
	if s.failed != nil {
		pos.Error = s.failed.Error()
	}
	s.p.Report(pos, s.prog)
}

// record saves that the next step to do is next. Called with the lock held.
func (s *Session) record(next int) {
	s.prog.Set(s.l, next, time.Now())
	if err := s.save(s.prog); err != nil {
		s.st.PlayErr = s.st.Words.T("saving progress: ") + err.Error()
	}
}

// finish marks the lesson done. Called with the lock held.
func (s *Session) finish() {
	s.stop()
	s.st.Done = true
	s.record(len(s.l.Steps))
	s.changed()
}

// stop ends the current step's watcher. Called with the lock held.
func (s *Session) stop() {
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	s.gen++
}

// show makes step i current and starts watching its check. Called with
// the lock held.
func (s *Session) show(i int) {
	s.stop()
	s.st = s.stateOf(i)
	s.autoplayed, s.failed = false, nil
	s.since = time.Now()
	s.record(i)
	s.began, s.hold = s.p.Begin()
	s.ready = true
	s.tell()
	marks.Write(marks.LessonStep) // on the screen at its next frame
	// Measured from the student's act, whenever it comes.
	s.watch(time.Time{})
}

// stateOf is the panel for step i, nothing checked yet. Called with the
// lock held.
func (s *Session) stateOf(i int) SessionState {
	step := &s.l.Steps[i]
	st := SessionState{
		Version: s.st.Version + 1,
		Lesson:  s.l.Number, Count: len(s.all), Title: s.l.Title,
		Step: i, Steps: len(s.l.Steps), StepTitle: step.Title, Text: s.local(step.Text),
		Words: lessonview.WordsFor(s.l.Lang),
	}
	if a := step.Action; a != nil {
		st.Kubectl, st.Key, st.Note = s.local(a.Kubectl), a.Key, s.local(a.Note)
	}
	if step.Check != nil {
		st.Waiting = s.l.Waits(i)
	}
	st.Predict = lessons.Localized(step.Predict, s.p.sb.Prefix())
	return st
}

// local is lesson text in this sandbox's namespaces.
func (s *Session) local(text string) string { return lessons.Localize(text, s.p.sb.Prefix()) }

// watch evaluates the current step's check until it passes (measured from
// acted), and shows the hint once it is due. Called with the lock held.
func (s *Session) watch(acted time.Time) {
	if s.cancel != nil {
		s.cancel()
	}
	step := &s.l.Steps[s.st.Step]
	if step.Check == nil {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.cancel = cancel
	gen, i, began, holders := s.gen, s.st.Step, s.began, s.hold
	update := func(fn func()) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if gen == s.gen && ctx.Err() == nil {
			fn()
		}
	}
	if step.Hint != "" {
		t := time.AfterFunc(step.HintAfter, func() {
			update(func() {
				if !s.st.Passed && s.st.Hint == "" {
					s.st.Hint = s.local(step.Hint)
					s.changed()
				}
			})
		})
		context.AfterFunc(ctx, func() { t.Stop() })
	}
	go func() {
		o, err := s.p.Await(ctx, step.Check, began, acted, holders, func(o checks.Outcome) {
			update(func() {
				if s.st.Detail != o.Detail {
					s.st.Detail = o.Detail
					s.changed()
				}
			})
		})
		update(func() {
			switch {
			case err == nil:
				s.st.Passed, s.st.Detail = true, o.Detail
				s.prog.Record(s.l, i, passedHow(s.autoplayed), time.Now())
				s.st.Predicted = step.Predict.Measure(s.st.Predicted, o.Detail)
				s.prog.Predicted(s.l, i, s.st.Predicted, time.Now()) // saved by record
				s.record(i + 1)
				if i+1 == len(s.l.Steps) {
					s.st.Done = true
				}
			default:
				s.st.Detail = err.Error() // can no longer pass: b to try the step again
				s.failed = err
			}
			s.changed()
		})
	}()
}
