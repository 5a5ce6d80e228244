package world

import (
	"time"

	"github.com/kkloud/rlab/operators/trace"
)

// Batch is Echoes created together, taken from the world's echo.converged
// reports of their creations: how many converged, from when the world saw
// the first of them created until it saw the last converge. It is a
// throughput measured, not estimated: the screen shows a style's last
// batch, and a lesson times a set of Echoes with it.
type Batch struct {
	N         int       // Echoes of the batch converged so far
	Created   time.Time // the earliest creation among them, as the world saw it
	Converged time.Time // the latest convergence
}

// BatchGap is how long after a batch's last convergence a new Echo may be
// seen created and still count in that batch: the Echoes of one `kubectl
// apply` are created milliseconds apart, and converge one after another.
const BatchGap = 5 * time.Second

// Takes says whether an Echo seen created at created counts in b: b has
// Echoes, and created is within BatchGap of its last convergence.
func (b Batch) Takes(created time.Time) bool {
	return b.N > 0 && !created.After(b.Converged.Add(BatchGap))
}

// CreationConverged says whether e is the world's report that a new Echo
// converged (echo.converged with created), and when the world saw that
// Echo created: the report's time less its latency.
func CreationConverged(e trace.Event) (created time.Time, ok bool) {
	c, _ := e.Convergence()
	if e.Kind != trace.Converged || !c.Created {
		return time.Time{}, false
	}
	ms := c.LatencyMS
	return e.Time.Add(-time.Duration(ms * float64(time.Millisecond))), true
}

// Add counts in one Echo, created and converged at those times.
func (b *Batch) Add(created, converged time.Time) {
	if b.N == 0 || created.Before(b.Created) {
		b.Created = created
	}
	if converged.After(b.Converged) {
		b.Converged = converged
	}
	b.N++
}

// Took is from the first creation to the last convergence.
func (b Batch) Took() time.Duration {
	if b.N == 0 {
		return 0
	}
	return b.Converged.Sub(b.Created)
}

// PerSecond is the batch's Echoes converged per second of Took, 0 before
// any time passed.
func (b Batch) PerSecond() float64 {
	if t := b.Took(); t > 0 {
		return float64(b.N) / t.Seconds()
	}
	return 0
}
