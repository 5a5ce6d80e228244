package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/checks"
	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/sim/marks"
)

// Guide commands, one per line on the student's input.
const (
	CmdNext = "n" // skip to the next step
	CmdBack = "b" // back to the previous step (the first: try it again)
	CmdPlay = "a" // autoplay this step's action, the same key as on the screen
	CmdQuit = "q" // stop; progress is kept
	// CmdReset ("r", or "r N") starts this lesson (or lesson N) again at
	// step 1 from a sandbox brought back to its baseline.
	CmdReset = "r"
	// CmdResetAsked N is the instructor's reset to lesson N, put among the
	// student's lines by their rlab (no one types an escape).
	CmdResetAsked = "\x1breset"
)

// ErrQuit ends Guide when the student quits.
var ErrQuit = errors.New("quit")

// Guide walks a student through lesson l from step from, on plain text, as
// the screen does: it waits for the sandbox to start, shows each step, waits
// for its check to pass live (the student acts in another terminal, or types
// a to let autoplay act), shows the hint after a while, says so when the
// check can no longer pass, and after a pass waits for the student (Enter)
// before the next step. in carries the student's command lines; prog
// records the next step to do and how each step went (by hand, played,
// skipped), and save is called whenever it changed. Once the last step
// is done it waits for the student to leave (q, or the end of input): the
// sandbox stays up meanwhile. It returns nil then.
func (p *Player) Guide(ctx context.Context, l *lessons.Lesson, from int, in <-chan string, out io.Writer, prog *Progress, save func(*Progress) error) error {
	w := lessonview.WordsFor(l.Lang)
	fmt.Fprintf(out, "%s\n%s\n\n", w.F("Lesson %d: %s", l.Number, l.Title), l.Summary)
	fmt.Fprintln(out, w.F("Commands: %s next · %s back (on the first step: again) · %s play it for me · %s start again from a clean sandbox · %s quit (then Enter)", CmdNext, CmdBack, CmdPlay, CmdReset, CmdQuit))
	fmt.Fprintln(out, w.T("Waiting for the sandbox: every style's sample Echo ready, the Go styles led…"))
	if why, err := p.AwaitBaseline(ctx); err != nil {
		return fmt.Errorf("the sandbox did not start: %s: %w", why, err)
	}
	saved := func() {
		if err := save(prog); err != nil {
			fmt.Fprintf(out, "  %s%v\n", w.T("saving progress: "), err)
		}
	}
	i := min(max(from, 0), len(l.Steps))
	for i < len(l.Steps) {
		prog.Set(l, i, time.Now())
		saved()
		step := i
		did := func(how How, pr lessons.Prediction) {
			prog.Record(l, step, how, time.Now())
			prog.Predicted(l, step, pr, time.Now())
			saved()
		}
		tell := func(since time.Time, st SessionState, failed error) {
			if p.Report != nil {
				pos := position(l, step, since, st, func(t string) string { return lessons.Localize(t, p.sb.Prefix()) })
				if failed != nil {
					pos.Error = failed.Error()
				}
				p.Report(pos, prog)
			}
		}
		move, err := p.guideStep(ctx, l, i, in, out, did, tell)
		if err != nil {
			return err
		}
		i = max(i+move, 0)
	}
	prog.Set(l, len(l.Steps), time.Now())
	saved()
	if p.Report != nil {
		p.Report(position(l, len(l.Steps)-1, time.Now(), SessionState{Passed: true, Done: true}, func(t string) string { return t }), prog)
	}
	fmt.Fprintf(out, "\n%s\n", w.F("Lesson %d done. The sandbox stays up: %s (or end of input) leaves and stops it.", l.Number, CmdQuit))
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-in:
			if !ok || strings.TrimSpace(line) == CmdQuit {
				return nil
			}
			if n, asked, ok := resetTo(strings.TrimSpace(line), l.Number); ok {
				return &ResetError{Lesson: n, Asked: asked}
			}
		}
	}
}

// isReset says whether cmd is a reset command.
func isReset(cmd string) bool {
	_, _, ok := resetTo(cmd, 0)
	return ok
}

// resetTo reads a reset command: r (lesson cur), r N, or the instructor's
// (asked).
func resetTo(cmd string, cur int) (n int, asked, ok bool) {
	if cmd == CmdReset {
		return cur, false, true
	}
	rest, found := strings.CutPrefix(cmd, CmdReset+" ")
	if !found {
		if rest, found = strings.CutPrefix(cmd, CmdResetAsked+" "); !found {
			return 0, false, false
		}
		asked = true
	}
	n, err := strconv.Atoi(strings.TrimSpace(rest))
	return n, asked, err == nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// guideStep shows step i and waits; it returns +1 to go on, -1 to go back,
// 0 to try it again. did is told how the step went once that is known,
// with the student's prediction.
func (p *Player) guideStep(ctx context.Context, l *lessons.Lesson, i int, in <-chan string, out io.Writer, did func(How, lessons.Prediction),
	tell func(since time.Time, st SessionState, failed error)) (int, error) {
	s := &l.Steps[i]
	w := lessonview.WordsFor(l.Lang)
	local := func(text string) string { return lessons.Localize(text, p.sb.Prefix()) }
	q, said := lessons.Localized(s.Predict, p.sb.Prefix()), lessons.Prediction{}
	fmt.Fprintf(out, "\n%s\n\n%s\n", w.F("── step %d of %d: %s", i+1, len(l.Steps), s.Title), indent(local(s.Text)))
	if q != nil {
		lessons.PrintAsk(out, q, w)
	}
	if a := s.Action; a != nil {
		if a.Kubectl != "" {
			fmt.Fprintf(out, "\n  %s\n\n%s\n", w.T(`In another terminal (after eval "$(rlab env)"):`), indent(indent(local(a.Kubectl))))
		}
		// No screen here, so no key to press: the command, or autoplay.
		if a.Note != "" {
			fmt.Fprintf(out, "\n  %s\n", local(a.Note))
		}
	}
	began, holders := p.Begin()
	// What the instructor sees: the step, since when, the check's last
	// detail.
	since, seen := time.Now(), SessionState{}
	tell(since, seen, nil)
	details := make(chan string, 1)
	if s.Check == nil {
		fmt.Fprintf(out, "\n  %s\n", w.T("(Enter to go on)"))
	} else {
		fmt.Fprintf(out, "\n  %s\n%s\n", w.T("waiting for:"), indent("• "+strings.ReplaceAll(l.Waits(i), "\n", "\n• ")))
	}
	marks.Write(marks.LessonStep) // printed: what `rlab bench` times the text mode to
	// The check runs until it passes, fails for good, or the student moves;
	// commands arrive meanwhile. Each wait has its own context: a step
	// played with a is measured again from the moment it was played.
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	type result struct {
		o   checks.Outcome
		err error
	}
	results := make(chan result, 1)
	await := func(acted time.Time) {
		if s.Check == nil {
			return
		}
		for _, c := range cancels {
			c()
		}
		cctx, cancel := context.WithCancel(ctx)
		cancels = append(cancels, cancel)
		go func() {
			o, err := p.Await(cctx, s.Check, began, acted, holders, func(o checks.Outcome) {
				select { // the latest detail wins
				case <-details:
				default:
				}
				details <- o.Detail
			})
			if cctx.Err() != nil {
				return // replaced, or the student moved
			}
			results <- result{o, err}
		}()
	}
	// Until the student plays it, measured from their own act.
	await(time.Time{})
	hint := time.NewTimer(s.HintAfter)
	defer hint.Stop()
	passed := s.Check == nil
	autoplayed := false
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case d := <-details:
			if !passed && d != seen.Detail {
				seen.Detail = d
				tell(since, seen, nil)
			}
		case r := <-results:
			if r.err != nil {
				fmt.Fprintf(out, "  ✗ %v\n  %s\n", r.err, w.F("%s tries the step again, %s skips it", CmdBack, CmdNext))
				tell(since, seen, r.err)
				continue
			}
			passed = true
			hint.Stop()
			said = q.Measure(said, r.o.Detail)
			did(passedHow(autoplayed), said)
			seen.Passed, seen.Detail = true, r.o.Detail
			tell(since, seen, nil)
			fmt.Fprintf(out, "  ✓ %s\n  %s\n", lessons.PredictReport(q, said, r.o.Detail, w), w.T("(Enter for the next step)"))
		case <-hint.C:
			if s.Hint != "" && !passed {
				fmt.Fprintf(out, "  %s\n%s\n", w.T("hint:"), indent(indent(local(s.Hint))))
			}
		case line, ok := <-in:
			if !ok {
				return 0, ErrQuit
			}
			switch cmd := strings.TrimSpace(line); {
			case cmd == CmdNext, cmd == "" && passed:
				if how, ok := leftHow(s, passed, autoplayed); ok {
					did(how, said)
				}
				return +1, nil
			case cmd == CmdBack && i == 0:
				return 0, nil
			case cmd == CmdBack:
				return -1, nil
			case cmd == CmdQuit:
				return 0, ErrQuit
			case isReset(cmd):
				n, asked, _ := resetTo(cmd, l.Number)
				return 0, &ResetError{Lesson: n, Asked: asked}
			case q != nil && lessons.IsNumber(cmd):
				fmt.Fprintln(out, "  "+lessons.Answer(q, cmd, &said, passed, w))
			case cmd == CmdPlay && passed:
				fmt.Fprintln(out, "  "+w.T("passed already: Enter for the next step"))
			case cmd == CmdPlay:
				if s.Action == nil || len(s.Action.Play) == 0 {
					fmt.Fprintln(out, "  "+w.T("nothing to play in this step"))
					continue
				}
				// A clean window: what the student did before is not the play's.
				for _, c := range cancels {
					c()
				}
				began, holders = p.Begin()
				autoplayed = true
				for _, op := range s.Action.Play {
					if err := p.Do(ctx, op); err != nil {
						fmt.Fprintf(out, "  %s: %v\n", op.Name, err)
					}
				}
				fmt.Fprintln(out, "  "+w.T("played; checking"))
				await(time.Now())
			case cmd == "":
			default:
				fmt.Fprintln(out, "  "+w.F("%s next · %s back · %s play · %s start again · %s quit", CmdNext, CmdBack, CmdPlay, CmdReset, CmdQuit))
			}
		}
	}
}
