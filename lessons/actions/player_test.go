package actions

import (
	"testing"

	"github.com/kkloud/rlab/lessons/checks"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/world"
)

// TestNoteSets: the player keeps each style's last batch of each set,
// across steps; a set made again later is a new batch, and edits and
// Echoes of no set count in none.
func TestNoteSets(t *testing.T) {
	edit := ev(500, world.Source, trace.Converged, "echo-clientgo", "Echo/base-001", trace.Convergence{Echo: "base-001", LatencyMS: 40.0})
	hello := ev(600, world.Source, trace.Converged, "echo-clientgo", "Echo/hello", trace.Convergence{Echo: "hello", Created: true, LatencyMS: 40.0})
	tests := []struct {
		name string
		evs  []trace.Event
		want map[checks.SetKey]world.Batch
	}{
		{"one set per style", []trace.Event{
			setConverged("clientgo", "base", 1, 2000, 1000), setConverged("clientgo", "base", 2, 4000, 2900),
			setConverged("runtime", "base", 1, 1500, 400), edit, hello,
		}, map[checks.SetKey]world.Batch{
			{Style: "clientgo", Prefix: "base"}: {N: 2, Created: at(1000), Converged: at(4000)},
			{Style: "runtime", Prefix: "base"}:  {N: 1, Created: at(1100), Converged: at(1500)},
		}},
		{"made again later", []trace.Event{
			setConverged("clientgo", "base", 1, 2000, 1000),
			setConverged("clientgo", "base", 1, 60000, 3000),
		}, map[checks.SetKey]world.Batch{
			{Style: "clientgo", Prefix: "base"}: {N: 1, Created: at(57000), Converged: at(60000)},
		}},
		{"two sets", []trace.Event{
			setConverged("clientgo", "base", 1, 2000, 1000), setConverged("clientgo", "tuned", 1, 60000, 3000),
		}, map[checks.SetKey]world.Batch{
			{Style: "clientgo", Prefix: "base"}:  {N: 1, Created: at(1000), Converged: at(2000)},
			{Style: "clientgo", Prefix: "tuned"}: {N: 1, Created: at(57000), Converged: at(60000)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Player{}
			for _, e := range tt.evs { // one event a delivery, as the bus may
				p.noteSets([]trace.Event{e})
			}
			if len(p.sets) != len(tt.want) {
				t.Fatalf("sets = %v, want %v", p.sets, tt.want)
			}
			for k, want := range tt.want {
				got := p.sets[k]
				if got.N != want.N || !got.Created.Equal(want.Created) || !got.Converged.Equal(want.Converged) || got.Took() != want.Took() {
					t.Errorf("%v = %+v, want %+v", k, got, want)
				}
			}
		})
	}
}
