package bus

import (
	"github.com/kkloud/rlab/sim/poll"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/trace"
)

// sink is what a collector delivered, safe to read while it runs.
type sink struct {
	mu      sync.Mutex
	evs     []trace.Event
	dropped int
	calls   int
}

func (s *sink) take(evs []trace.Event, dropped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, evs...)
	s.dropped += dropped
	s.calls++
}

func (s *sink) got() (evs []trace.Event, dropped, calls int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]trace.Event(nil), s.evs...), s.dropped, s.calls
}

func publish(b *Bus, from, to int) {
	for i := from; i < to; i++ {
		b.Publish(trace.Event{Kind: trace.Log, Payload: trace.Message{Msg: strconv.Itoa(i)}})
	}
}

// inOrder fails unless evs are the events numbered from, from+1, ...
func inOrder(t *testing.T, evs []trace.Event, from int) {
	t.Helper()
	for j, e := range evs {
		if m, _ := e.Message(); m.Msg != strconv.Itoa(from+j) {
			t.Fatalf("event %d is %v, want %d: %v", j, m.Msg, from+j, evs)
		}
	}
}

func TestCollector(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		// run publishes and then reads what was delivered, as a caller would.
		run          func(b *Bus, c *Collector)
		wantEvents   int
		wantFrom     int
		wantDropped  int
		pollForCalls bool // delivered by the collector's goroutine, not by a call
	}{
		{
			name: "delivers in order from its goroutine",
			size: 100,
			run:  func(b *Bus, _ *Collector) { publish(b, 0, 50) },
			// nothing waits for them but the poll below
			wantEvents: 50, pollForCalls: true,
		},
		{
			name: "flush is synchronous",
			size: 100,
			run: func(b *Bus, c *Collector) {
				publish(b, 0, 10)
				c.Flush()
			},
			wantEvents: 10,
		},
		{
			name: "close delivers what is pending",
			size: 100,
			run: func(b *Bus, c *Collector) {
				publish(b, 0, 10)
				c.Close()
			},
			wantEvents: 10,
		},
		{
			name: "drops are reported",
			size: 3,
			run: func(b *Bus, c *Collector) {
				// A collector whose goroutine cannot run in between: hold
				// its lock while publishing, so the ring overflows.
				c.mu.Lock()
				publish(b, 0, 10)
				c.mu.Unlock()
				c.Close()
			},
			wantEvents: 3, wantFrom: 7, wantDropped: 7,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New()
			var s sink
			c := b.Collect(tc.size, s.take)
			defer c.Close()
			tc.run(b, c)
			if tc.pollForCalls {
				// The collector's own goroutine delivers: wait for it.
				_ = poll.Until(t.Context(), time.Millisecond, 5*time.Second, "", poll.True(func() bool {
					evs, _, _ := s.got()
					return len(evs) >= tc.wantEvents
				}))
			}
			evs, dropped, _ := s.got()
			if len(evs) != tc.wantEvents || dropped != tc.wantDropped {
				t.Fatalf("%d events, %d dropped; want %d, %d", len(evs), dropped, tc.wantEvents, tc.wantDropped)
			}
			inOrder(t, evs, tc.wantFrom)
		})
	}
}

func TestCollectorCloseIsFinalAndIdempotent(t *testing.T) {
	b := New()
	var s sink
	c := b.Collect(16, s.take)
	publish(b, 0, 5)
	c.Close()
	c.Close()
	_, _, calls := s.got()
	publish(b, 5, 10)
	c.Flush()
	if evs, _, after := s.got(); len(evs) != 5 || after != calls {
		t.Fatalf("after Close: %d events, %d calls (were %d); want 5 events and no call", len(evs), after, calls)
	}
	b.mu.Lock()
	n := len(b.subs)
	b.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d subscribers left after Close", n)
	}
}

func TestCollectorConcurrentFlushKeepsOrder(t *testing.T) {
	b := New()
	var s sink
	c := b.Collect(1<<16, s.take)
	var wg sync.WaitGroup
	wg.Go(func() { publish(b, 0, 5000) })
	for range 4 {
		wg.Go(func() {
			for range 200 {
				c.Flush()
			}
		})
	}
	wg.Wait()
	c.Close()
	evs, dropped, _ := s.got()
	if len(evs) != 5000 || dropped != 0 {
		t.Fatalf("%d events, %d dropped; want 5000, 0", len(evs), dropped)
	}
	inOrder(t, evs, 0)
}

func TestCollectLaterSubscription(t *testing.T) {
	b := New()
	sub := b.Subscribe(16)
	publish(b, 0, 3) // before anyone collects: kept in the ring
	var s sink
	c := sub.Collect(s.take)
	publish(b, 3, 6)
	c.Close()
	evs, _, _ := s.got()
	if len(evs) != 6 {
		t.Fatalf("%d events, want 6", len(evs))
	}
	inOrder(t, evs, 0)
}
