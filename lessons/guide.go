package lessons

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Guide commands, one per line on the student's input.
const (
	CmdNext = "n" // skip to the next step
	CmdBack = "b" // back to the previous step
	CmdPlay = "a" // autoplay this step's action, the same key as on the screen
	CmdQuit = "q" // stop; progress is kept
)

// ErrQuit ends Guide when the student quits.
var ErrQuit = errors.New("quit")

// Guide walks a student through lesson l from step from, on plain text: it
// shows each step, waits for its check to pass live (the student acts in
// another terminal, or types p to let autoplay act), shows the hint after a
// while, and moves on. in carries the student's command lines; save is
// called with the next step to do each time it changes. It returns nil once
// the last step is done.
func (p *Player) Guide(ctx context.Context, l *Lesson, from int, in <-chan string, out io.Writer, save func(next int)) error {
	fmt.Fprintf(out, "Lesson %d: %s\n%s\n\n", l.Number, l.Title, l.Summary)
	fmt.Fprintf(out, "Commands: %s next · %s back · %s play it for me · %s quit (then Enter)\n", CmdNext, CmdBack, CmdPlay, CmdQuit)
	i := min(max(from, 0), len(l.Steps))
	for i < len(l.Steps) {
		save(i)
		move, err := p.guideStep(ctx, l, i, in, out)
		if err != nil {
			return err
		}
		i = max(i+move, 0)
	}
	save(len(l.Steps))
	fmt.Fprintf(out, "\nLesson %d done.\n", l.Number)
	return nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// guideStep shows step i and waits; it returns +1 to go on, -1 to go back.
func (p *Player) guideStep(ctx context.Context, l *Lesson, i int, in <-chan string, out io.Writer) (int, error) {
	s := &l.Steps[i]
	fmt.Fprintf(out, "\n── step %d of %d: %s\n\n%s\n", i+1, len(l.Steps), s.Title, indent(s.Text))
	if a := s.Action; a != nil {
		if a.Kubectl != "" {
			fmt.Fprintf(out, "\n  In another terminal (after eval \"$(rlab env)\"):\n\n%s\n", indent(indent(a.Kubectl)))
		}
		// No screen here, so no key to press: the command, or autoplay.
		if a.Note != "" {
			fmt.Fprintf(out, "\n  %s\n", a.Note)
		}
	}
	began, holders := p.Begin()
	if s.Check == nil {
		fmt.Fprintf(out, "\n  (%s to go on)\n", CmdNext)
	} else {
		fmt.Fprintf(out, "\n  waiting for:\n%s\n", indent("• "+strings.ReplaceAll(s.Check.Describe(), "\n", "\n• ")))
	}
	// The check runs until it passes or the student moves; commands arrive
	// meanwhile.
	// Each wait has its own context: a step played with p is measured again
	// from the moment it was played.
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	passed := make(chan Outcome, 1)
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
			if o, err := p.Await(cctx, s.Check, began, acted, holders, nil); err == nil {
				select {
				case passed <- o:
				default:
				}
			}
		}()
	}
	// Until the student plays it, measured from when the step was shown.
	await(began)
	hint := time.NewTimer(s.HintAfter)
	defer hint.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case o := <-passed:
			fmt.Fprintf(out, "  ✓ %s\n", o.Detail)
			return +1, nil
		case <-hint.C:
			if s.Hint != "" {
				fmt.Fprintf(out, "  hint:\n%s\n", indent(indent(s.Hint)))
			}
		case line, ok := <-in:
			if !ok {
				return 0, ErrQuit
			}
			switch strings.TrimSpace(line) {
			case CmdNext:
				return +1, nil
			case CmdBack:
				return -1, nil
			case CmdQuit:
				return 0, ErrQuit
			case CmdPlay:
				if s.Action == nil {
					fmt.Fprintln(out, "  nothing to play in this step")
					continue
				}
				for _, op := range s.Action.Play {
					if err := p.Do(ctx, op); err != nil {
						fmt.Fprintf(out, "  %s: %v\n", op.Name, err)
					}
				}
				fmt.Fprintln(out, "  played; checking")
				await(time.Now())
			default:
				fmt.Fprintf(out, "  %s next · %s back · %s play · %s quit\n", CmdNext, CmdBack, CmdPlay, CmdQuit)
			}
		}
	}
}
