package world

import (
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/trace"
)

// TestCreationConverged: only the report of a creation counts, dated back
// by its latency to when the world saw the Echo created.
func TestCreationConverged(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		e           trace.Event
		wantOK      bool
		wantCreated time.Time
	}{
		{"created", trace.Event{Time: t0, Kind: trace.Converged, Payload: trace.Convergence{Created: true, LatencyMS: 1500.0}}, true, t0.Add(-1500 * time.Millisecond)},
		{"created, no latency", trace.Event{Time: t0, Kind: trace.Converged, Payload: trace.Convergence{Created: true}}, true, t0},
		{"an edit", trace.Event{Time: t0, Kind: trace.Converged, Payload: trace.Convergence{LatencyMS: 40.0}}, false, time.Time{}},
		{"another kind", trace.Event{Time: t0, Kind: trace.DriftRepaired, Payload: trace.Drift{LatencyMS: 40.0}}, false, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := CreationConverged(tt.e)
			if ok != tt.wantOK || !got.Equal(tt.wantCreated) {
				t.Errorf("CreationConverged = %v, %v; want %v, %v", got, ok, tt.wantCreated, tt.wantOK)
			}
		})
	}
}

// TestBatch: from the earliest creation to the latest convergence,
// whatever order the Echoes converge in.
func TestBatch(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type echo struct{ created, converged float64 }
	tests := []struct {
		name     string
		echoes   []echo
		wantN    int
		wantTook time.Duration
		wantRate float64
	}{
		{"none", nil, 0, 0, 0},
		{"one", []echo{{0, 2}}, 1, 2 * time.Second, 0.5},
		{"in creation order", []echo{{0, 1}, {0.5, 3}, {1, 4}, {1.2, 10}}, 4, 10 * time.Second, 0.4},
		{"out of order", []echo{{1, 4}, {0, 6}, {0.5, 3}}, 3, 6 * time.Second, 0.5},
		{"all at one instant", []echo{{1, 1}, {1, 1}}, 2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Batch
			for _, e := range tt.echoes {
				b.Add(at(e.created), at(e.converged))
			}
			if b.N != tt.wantN || b.Took() != tt.wantTook || b.PerSecond() != tt.wantRate {
				t.Errorf("N %d, Took %s, PerSecond %g; want %d, %s, %g", b.N, b.Took(), b.PerSecond(), tt.wantN, tt.wantTook, tt.wantRate)
			}
		})
	}
}
