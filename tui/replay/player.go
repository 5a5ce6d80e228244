package replay

import (
	"time"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui"
)

// Playback plays a recording on a virtual clock. It is the screen's Source:
// due events are published on its own bus, the world is the last one
// recorded up to the clock. It is used from one goroutine (the screen's).
type Playback struct {
	rec    *Recording
	bus    *bus.Bus
	sub    *bus.Sub
	pos    int // next record to play
	now    time.Time
	speed  float64
	paused bool
	snap   world.Snapshot
	ver    uint64
}

// NewPlayback returns a player at the start of rec, paused if paused.
func NewPlayback(rec *Recording) *Playback {
	b := bus.New()
	p := &Playback{rec: rec, bus: b, sub: b.Subscribe(tui.SubSize), now: rec.Header.Start, speed: 1}
	p.publishDue()
	return p
}

// Header is the recording's header.
func (p *Playback) Header() Header { return p.rec.Header }

// Now is the virtual clock.
func (p *Playback) Now() time.Time { return p.now }

// Start and End bound the recording.
func (p *Playback) Start() time.Time { return p.rec.Header.Start }

// End is the time of the last record.
func (p *Playback) End() time.Time { return p.rec.End() }

// Speed is the playback speed (1 = real time).
func (p *Playback) Speed() float64 { return p.speed }

// SetSpeed sets the playback speed, between 1/16 and 64.
func (p *Playback) SetSpeed(s float64) { p.speed = min(max(s, 1.0/16), 64) }

// Paused says whether the clock stands still.
func (p *Playback) Paused() bool { return p.paused }

// SetPaused stops or starts the clock.
func (p *Playback) SetPaused(v bool) { p.paused = v }

// Ended says whether everything has been played.
func (p *Playback) Ended() bool { return p.pos >= len(p.rec.Records) }

// Advance moves the clock by d of real time (times the speed) and
// publishes what became due.
func (p *Playback) Advance(d time.Duration) {
	if p.paused || d <= 0 {
		return
	}
	p.now = p.now.Add(time.Duration(float64(d) * p.speed))
	if end := p.End(); p.now.After(end) {
		p.now = end
	}
	p.publishDue()
}

func (p *Playback) publishDue() {
	for p.pos < len(p.rec.Records) && !p.rec.Records[p.pos].Time.After(p.now) {
		r := p.rec.Records[p.pos]
		if r.Event != nil {
			p.bus.Publish(*r.Event)
		}
		if r.World != nil {
			p.snap = *r.World
			p.ver++
		}
		p.pos++
	}
}

// Seek moves the clock to t and returns every event up to t, for a screen
// that starts over; nothing of it is published on the bus.
func (p *Playback) Seek(t time.Time) []trace.Event {
	if t.Before(p.Start()) {
		t = p.Start()
	}
	if end := p.End(); t.After(end) {
		t = end
	}
	p.sub.Drain()
	p.now, p.pos = t, 0
	p.snap = world.Snapshot{}
	p.ver++
	var evs []trace.Event
	for p.pos < len(p.rec.Records) && !p.rec.Records[p.pos].Time.After(t) {
		r := p.rec.Records[p.pos]
		if r.Event != nil {
			evs = append(evs, *r.Event)
		}
		if r.World != nil {
			p.snap = *r.World
		}
		p.pos++
	}
	return evs
}

// Sub is the subscription the screen drains.
func (p *Playback) Sub() *bus.Sub { return p.sub }

// Snapshot is the last world recorded up to the clock.
func (p *Playback) Snapshot() world.Snapshot { return p.snap }

// Version changes with each world played.
func (p *Playback) Version() uint64 { return p.ver }
