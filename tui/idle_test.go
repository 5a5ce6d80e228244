package tui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/internal/fixture"
)

// countingSource counts the world snapshots the screen takes.
type countingSource struct {
	*fixture.Source
	snaps int
}

func (c *countingSource) Snapshot() world.Snapshot { c.snaps++; return c.Source.Snapshot() }

// rest is a screen at rest on a simulated clock, shared by its model (Now
// and the wall clock) and the simulation.
type rest struct {
	m      *Model
	src    *countingSource
	clock  time.Time
	world  world.Snapshot
	frames int
	minGap time.Duration // the shortest wait the pump asked for
}

func newRest(tb testing.TB, w world.Snapshot) *rest {
	tb.Helper()
	r := &rest{src: &countingSource{Source: fixture.NewSource(w)}, clock: fixture.At(41 * time.Second), world: w, minGap: time.Hour}
	r.m = New(Options{Source: r.src, Now: func() time.Time { return r.clock }, Start: fixture.T0, Frame: DefaultFrame, Dark: true})
	r.m.wall = func() time.Time { return r.clock }
	r.m.Ingest(fixture.Events())
	r.m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	// Let what the fixture's events lit cool down.
	r.run(10*time.Second, false)
	r.frames, r.src.snaps, r.m.draw.renders, r.minGap = 0, 0, 0, time.Hour
	return r
}

// restEvents are what an idle sandbox does in (from, to]: each Go leader
// renews its Lease and the standby tries to take it every 2 s (with the
// world's Lease renewed), and the shell loop polls every 5 s.
func (r *rest) due(from, to time.Time) (evs []trace.Event, renewed bool) {
	for t := from.Truncate(time.Second).Add(time.Second); !t.After(to); t = t.Add(time.Second) {
		if !t.After(from) {
			continue
		}
		if t.Unix()%2 == 0 {
			renewed = true
			for _, st := range []style.Style{style.ClientGo, style.Runtime} {
				for verb, rep := range map[string]string{"update": "a", "get": "b"} {
					evs = append(evs, trace.Event{Time: t, Source: "proxy/" + st.Source(rep), Kind: trace.APIRequest, Namespace: st.Namespace(),
						Object: "Lease/echo-operator", Payload: trace.Request{Verb: verb, Resource: "leases", Code: 200}})
				}
			}
		}
		if t.Unix()%5 == 0 {
			sh, ns := style.Shell.Source("a"), style.Shell.Namespace()
			evs = append(evs,
				trace.Event{Time: t, Source: sh, Kind: trace.PollTick, Namespace: ns, Payload: trace.Poll{IntervalS: 5}},
				trace.Event{Time: t.Add(40 * time.Millisecond), Source: sh, Kind: trace.Kubectl, Namespace: ns, Payload: trace.Command{Verb: "get echoes", Code: 0}},
				trace.Event{Time: t.Add(40 * time.Millisecond), Source: "proxy/" + sh, Kind: trace.APIRequest, Namespace: ns,
					Payload: trace.Request{Verb: "list", Resource: "echoes", Code: 200}})
		}
	}
	return evs, renewed
}

// run simulates d: each frame comes when the pump's plan says (at the
// first event on the bus plus one frame, if it waits on the bus), and is
// drawn as the program would.
func (r *rest) run(d time.Duration, events bool) {
	end := r.clock.Add(d)
	for r.clock.Before(end) {
		p := r.m.plan
		next := r.clock.Add(p.after)
		if events && p.onBus {
			if evs, _ := r.due(r.clock, next); len(evs) > 0 {
				next = evs[0].Time.Add(r.m.opts.Frame)
			}
		}
		if evs, renewed := r.due(r.clock, next); events {
			for _, e := range evs {
				r.src.Bus.Publish(e)
			}
			if renewed {
				r.world = renewLeases(r.world, next)
				r.src.SetWorld(r.world)
			}
		}
		r.clock = next
		r.m.Update(FrameMsg{})
		r.m.View()
		r.frames++
		if r.m.plan.after > 0 {
			r.minGap = min(r.minGap, r.m.plan.after)
		}
	}
}

// renewLeases is s with every Lease renewed at t.
func renewLeases(s world.Snapshot, t time.Time) world.Snapshot {
	out := world.Snapshot{Namespaces: make(map[string]*world.NamespaceView, len(s.Namespaces))}
	for ns, v := range s.Namespaces {
		c := *v
		if v.Lease != nil {
			l := *v.Lease
			l.Renewed = t
			c.Lease = &l
		}
		out.Namespaces[ns] = &c
	}
	return out
}

// TestTUIIdleIsQuiet: at rest the screen wakes for events and once a second
// for its clock, no more: no frame pump ticking ten or thirty times a
// second, one redraw a second (the clock, countdowns) plus the shell loop's
// polls, and at most one world snapshot a second however often the Leases
// renew.
func TestTUIIdleIsQuiet(t *testing.T) {
	const secs = 60
	tests := []struct {
		name                            string
		events                          bool
		maxFrames, maxRenders, maxSnaps float64 // a second, on average
	}{
		{"nothing at all", false, 1.1, 1.1, 0},
		{"Lease renewals and shell polls", true, 2.5, 1.6, 0.55},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRest(t, fixture.ScaleSnapshot(scalePerStyle))
			r.run(secs*time.Second, tt.events)
			frames, renders, snaps := float64(r.frames)/secs, float64(r.m.draw.renders)/secs, float64(r.src.snaps)/secs
			t.Logf("a second at rest: %.2f frames, %.2f redraws, %.2f snapshots; shortest wait %v", frames, renders, snaps, r.minGap)
			if frames > tt.maxFrames || renders > tt.maxRenders || snaps > tt.maxSnaps {
				t.Errorf("at rest: %.2f frames/s (want ≤ %.2f), %.2f redraws/s (≤ %.2f), %.2f snapshots/s (≤ %.2f)",
					frames, tt.maxFrames, renders, tt.maxRenders, snaps, tt.maxSnaps)
			}
			if !r.m.plan.onBus {
				t.Error("at rest the pump does not wait on the bus")
			}
		})
	}
}

// TestTUIAppTickStops: the App's 100 ms tick (the start-up clock) stops once
// the main screen is up.
func TestTUIAppTickStops(t *testing.T) {
	a := NewApp(AppOptions{Main: Options{Frame: DefaultFrame}})
	if _, cmd := a.Update(appTick{}); cmd == nil {
		t.Fatal("the start-up clock does not tick during start-up")
	}
	a.Update(ReadyMsg{Source: fixture.NewSource(fixture.Snapshot()), Actions: &fixture.Actions{}})
	if _, cmd := a.Update(appTick{}); cmd != nil {
		t.Fatal("the start-up clock still ticks on the main screen")
	}
}

// BenchmarkTUIIdleScale is a minute at rest with 1,500 Echoes, simulated:
// the screen's own work (frames, redraws, snapshots handled; not the
// world's copy nor the terminal's) per simulated second, and as a share
// of one core.
// go test ./tui -run '^$' -bench TUIIdleScale
func BenchmarkTUIIdleScale(b *testing.B) {
	r := newRest(b, fixture.ScaleSnapshot(scalePerStyle))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r.run(time.Minute, true)
	}
	perSec := float64(b.Elapsed().Microseconds()) / float64(b.N) / 60
	b.ReportMetric(perSec, "µs/sim-s")
	b.ReportMetric(perSec/1e6*100, "%core")
}
