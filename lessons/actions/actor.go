package actions

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/sandbox"
)

// Actor performs lesson actions on a running sandbox for rlab do. Unlike a
// Player it records nothing (it may live as long as the sandbox), and its
// rlab.act events say the student asked (trace.ViaCommand).
type Actor struct{ p *Player }

// NewActor acts on sb. It subscribes to nothing: there is nothing to close.
func NewActor(sb *sandbox.Sandbox) *Actor {
	return &Actor{p: &Player{sb: sb, Poll: 100 * time.Millisecond, via: trace.ViaCommand}}
}

// Prepare reads the words typed after rlab do (ParseVerb) and returns what
// performs them: the control socket hands over words, so that it needs no
// type of the course.
func (a *Actor) Prepare(words []string) (func(context.Context) ([]string, error), error) {
	op, err := lessons.ParseVerb(words)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) ([]string, error) { return a.Do(ctx, op) }, nil
}

// Do performs op and says what it did, one line per thing done
// ("partitioned clientgo/a (refuse)").
func (a *Actor) Do(ctx context.Context, op lessons.Op) ([]string, error) {
	if st := op.Args.Str("style"); st != "" {
		runs := a.p.sb.Styles()
		if !slices.ContainsFunc(lessons.ExpandStyle(st), func(s style.Style) bool { return slices.Contains(runs, s) }) {
			if want := lessons.ExpandStyle(st); len(want) > 1 {
				return nil, fmt.Errorf("this sandbox runs none of %s (it runs: %s)", lessons.StyleNames(want), orNone(runs))
			}
			return nil, fmt.Errorf("this sandbox runs no %s operator (it runs: %s)", st, orNone(runs))
		}
	}
	// The screen opens before the operators run: what acts on them waits.
	if err := a.p.sb.WaitOperators(ctx); err != nil {
		return nil, err
	}
	ctx, r := withReport(ctx)
	if err := a.p.Do(ctx, op); err != nil {
		return r.said(), err
	}
	if done := r.said(); len(done) > 0 {
		return done, nil
	}
	return []string{op.Describe()}, nil
}

// orNone lists styles, or says there are none.
func orNone(ss []style.Style) string {
	if len(ss) == 0 {
		return "none"
	}
	return lessons.StyleNames(ss)
}

// report collects what an action says it did, when someone asks (an
// Actor); autoplay does not, and keeps nothing.
type report struct {
	mu    sync.Mutex
	lines []string
}

type reportKey struct{}

// withReport is ctx, with a report that said adds to.
func withReport(ctx context.Context) (context.Context, *report) {
	r := &report{}
	return context.WithValue(ctx, reportKey{}, r), r
}

// said adds a line to ctx's report, if it has one.
func said(ctx context.Context, format string, a ...any) {
	r, ok := ctx.Value(reportKey{}).(*report)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, a...))
}

func (r *report) said() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}
