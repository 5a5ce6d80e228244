package actions

import (
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/world"
)

// What these tests share with lessons/checks' (copies: a test file is no
// package's to import).
var at, ev = simtest.At, simtest.Ev

// setConverged is the world's report that Echo prefix-00i converged, took
// ms after its creation.
func setConverged(st, prefix string, i, ms int, took float64) trace.Event {
	name := sandbox.SetName(prefix, i)
	return ev(ms, world.Source, trace.Converged, style.Style(st).Namespace(), "Echo/"+name,
		trace.Convergence{Echo: name, LatencyMS: took, Created: true})
}
