package sandbox

import (
	"context"

	"github.com/kkloud/rlab/sim/world"
)

// World is the part of the engine that owns the live model of the style
// namespaces: the world's informers, and the cancel that stops them. It is
// empty with no operators.
type World struct {
	w      *world.World
	cancel context.CancelFunc // stops the world's informers
}

// Snapshot is the live model of the style namespaces now (empty with no
// operators).
func (l *World) Snapshot() world.Snapshot {
	if l.w == nil {
		return world.Snapshot{}
	}
	return l.w.Snapshot()
}

// WaitFor waits until cond holds of the live model, or ctx ends.
func (l *World) WaitFor(ctx context.Context, cond func(world.Snapshot) bool) error {
	return l.w.WaitFor(ctx, cond)
}

// Settling is how many of the live model's judgments wait for their settle
// time: at 0, every event derived from what it has seen is published.
func (l *World) Settling() int { return l.w.Settling() }

// Changes tells of each change of the live model (changed has room for
// one consumer) until it stops (done); both nil with no operators.
func (l *World) Changes() (changed, done <-chan struct{}) {
	if l.w == nil {
		return nil, nil
	}
	return l.w.Changed(), l.w.Done()
}

// stop stops the informers; safe to call more than once.
func (l *World) stop() {
	if l.cancel != nil {
		l.cancel()
		l.cancel = nil
	}
}
