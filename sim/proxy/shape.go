package proxy

// The watch faults: stale (every event held a while) and unobserved (of a
// window's events, only each object's latest delivered) reshape the stream
// a watch delivers, frame by frame; disconnect closes it. A watch opened
// while neither shaping fault is on is passed through as it comes
// (watch.go), at no cost: turning one on closes the open watches once, so
// that the client's next watch goes through a shapedBody.

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/fault"
)

// errFrameTooLarge ends a shaped watch whose event outgrew maxFrame: it
// cannot be held without being buffered whole.
var errFrameTooLarge = errors.New("rlab proxy: a watch event over 8 MiB cannot be held by a fault")

// shaped says whether a watch started under set goes through a shapedBody.
func shaped(set faults) bool {
	return set[fault.Stale] != nil || set[fault.Unobserved] != nil
}

// openWatch registers a watch about to be forwarded, so that the faults
// that close watches can reach it, and notes the faults it starts under.
// It returns the unregister.
func (p *Proxy) openWatch(x *exchange, cancel context.CancelCauseFunc) func() {
	p.mu.Lock()
	p.watches[x] = cancel
	x.at = p.faultSet()
	p.mu.Unlock()
	var t *time.Timer
	if d := x.at[fault.Disconnect]; d != nil && d.Delay > 0 {
		t = time.AfterFunc(d.Delay, func() {
			if p.faultSet()[fault.Disconnect] == d { // not turned off or replaced since
				p.disconnect(x, cancel)
			}
		})
	}
	return func() {
		if t != nil {
			t.Stop()
		}
		p.mu.Lock()
		delete(p.watches, x)
		p.mu.Unlock()
	}
}

// closeWatches closes every open watch, for a fault just turned on.
func (p *Proxy) closeWatches() {
	p.mu.Lock()
	open := make(map[*exchange]context.CancelCauseFunc, len(p.watches))
	for x, c := range p.watches {
		open[x] = c
	}
	p.mu.Unlock()
	for x, cancel := range open {
		p.disconnect(x, cancel)
	}
}

// disconnect closes one watch mid-flight and says so.
func (p *Proxy) disconnect(x *exchange, cancel context.CancelCauseFunc) {
	p.injected(fault.Disconnect, x.call, trace.Injection{})
	cancel(errDisconnected)
}

// frame is one watch event as it came on the wire.
type frame struct {
	data          []byte
	typ, name, ns string
	at, due       time.Time
	held          bool // stale: held until due
}

// shapedBody hands a watch's events to the replica when the faults say: a
// goroutine reads them from upstream (through the watchCounter, which
// splits the frames), and Read gives each out once it is due. Each event
// is published (api.watch_event) when it is given out, not when it came.
type shapedBody struct {
	p   *Proxy
	x   *exchange
	ctx context.Context
	src io.ReadCloser

	mu        sync.Mutex
	window    []frame   // unobserved: the events of the open window
	windowEnd time.Time // when the window's events are compacted
	ready     []frame   // in order, each given out at its due time
	lastDue   time.Time // no frame is due before the one ahead of it
	err       error     // how upstream ended
	wake      chan struct{}

	cur []byte // what is left of the frame being read out
}

// shape wraps a watch's counter in a shapedBody and starts its reader.
func (p *Proxy) shape(x *exchange, wc *watchCounter, ctx context.Context) io.ReadCloser {
	b := &shapedBody{p: p, x: x, ctx: ctx, src: wc, wake: make(chan struct{}, 1)}
	wc.frame = b.add
	go b.run()
	return b
}

// run reads upstream until it ends; the counter calls add for each frame.
func (b *shapedBody) run() {
	buf := make([]byte, 32<<10)
	for {
		if _, err := b.src.Read(buf); err != nil {
			b.mu.Lock()
			if b.err == nil {
				b.err = err
			}
			b.mu.Unlock()
			b.signal()
			return
		}
	}
}

func (b *shapedBody) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// add takes one frame from upstream, under the faults on now.
func (b *shapedBody) add(raw []byte, typ, name, ns string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return // the watch ends at the gap: nothing after it is delivered
	}
	if raw == nil {
		// An event that cannot be held ends the watch where it stands,
		// rather than leave a gap the client would not know of.
		b.err = errFrameTooLarge
		b.window, b.ready = nil, nil
		b.signal()
		return
	}
	now := time.Now()
	f := frame{data: raw, typ: typ, name: name, ns: ns, at: now}
	set := b.p.faultSet()
	if u := set[fault.Unobserved]; u != nil {
		if len(b.window) == 0 {
			b.windowEnd = now.Add(u.Delay)
		}
		b.window = append(b.window, f)
	} else {
		b.flushLocked(now)
		b.pushLocked(f, now)
	}
	b.signal()
}

// pushLocked queues f behind the frames ahead of it, held if stale is on.
func (b *shapedBody) pushLocked(f frame, now time.Time) {
	f.due = now
	if s := b.p.faultSet()[fault.Stale]; s != nil {
		f.due, f.held = f.at.Add(s.Delay), true
	}
	if f.due.Before(b.lastDue) {
		f.due = b.lastDue // never ahead of an earlier event
	}
	if f.due.Before(now) {
		f.due = now
	}
	b.lastDue = f.due
	b.ready = append(b.ready, f)
}

// flushLocked ends the unobserved window: of each object's events only
// the last is kept, in its place; bookmarks are kept; the rest are dropped,
// each said as a fault.injected event.
func (b *shapedBody) flushLocked(now time.Time) {
	if len(b.window) == 0 {
		return
	}
	last := map[[2]string]int{}
	for i, f := range b.window {
		if f.typ != "BOOKMARK" {
			last[[2]string{f.ns, f.name}] = i
		}
	}
	for i, f := range b.window {
		if f.typ != "BOOKMARK" && last[[2]string{f.ns, f.name}] != i {
			b.p.enqueue(b.p.watchEvent(b.x, trace.FaultInjected, f.typ, f.name, f.ns,
				&trace.Injection{Fault: string(fault.Unobserved), Verb: "watch"}))
			continue
		}
		b.pushLocked(f, now)
	}
	b.window = nil
}

// Read gives out the frames that are due, waiting for the next one.
func (b *shapedBody) Read(p []byte) (int, error) {
	for {
		if len(b.cur) > 0 {
			n := copy(p, b.cur)
			b.cur = b.cur[n:]
			return n, nil
		}
		b.mu.Lock()
		now := time.Now()
		if len(b.window) > 0 && (!now.Before(b.windowEnd) || b.err != nil) {
			b.flushLocked(now)
		}
		if len(b.ready) > 0 && !now.Before(b.ready[0].due) {
			f := b.ready[0]
			b.ready = b.ready[1:]
			b.mu.Unlock()
			b.deliver(f, now)
			b.cur = f.data
			continue
		}
		var next time.Time
		if len(b.ready) > 0 {
			next = b.ready[0].due
		}
		if len(b.window) > 0 && (next.IsZero() || b.windowEnd.Before(next)) {
			next = b.windowEnd
		}
		err := b.err
		b.mu.Unlock()
		if next.IsZero() && err != nil {
			return 0, err
		}
		if err := b.wait(next, now); err != nil {
			return 0, err
		}
	}
}

// wait waits until next (if set), a new frame, or the client's end.
func (b *shapedBody) wait(next, now time.Time) error {
	var timer <-chan time.Time
	if !next.IsZero() {
		t := time.NewTimer(next.Sub(now))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
	case <-b.wake:
	case <-b.ctx.Done():
		return context.Cause(b.ctx)
	}
	return nil
}

// deliver publishes a frame given out: the watch event, and how long the
// stale fault held it.
func (b *shapedBody) deliver(f frame, now time.Time) {
	b.p.watchEvents.Add(1)
	if f.held {
		b.p.enqueue(b.p.watchEvent(b.x, trace.FaultInjected, f.typ, f.name, f.ns, &trace.Injection{
			Fault: string(fault.Stale), Verb: "watch", DelayMS: now.Sub(f.at).Milliseconds()}))
	}
	b.p.enqueue(b.p.watchEvent(b.x, trace.APIWatchEvent, f.typ, f.name, f.ns, nil))
}

func (b *shapedBody) Close() error { return b.src.Close() }
