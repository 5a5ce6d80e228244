// Package bus fans rlab's trace events out to the screen, the recorder, the
// timeline and the lessons, without ever blocking a producer.
package bus

import (
	"sync"
	"time"

	"github.com/kkloud/rlab/operators/trace"
)

// Bus fans events out to subscribers. Publish never blocks the producer: each
// subscriber has a bounded ring; when it is full the oldest event is dropped
// and counted, and the subscriber learns how many it lost on its next Drain.
type Bus struct {
	mu   sync.Mutex
	subs map[*Sub]struct{}
}

// New returns an empty bus.
func New() *Bus { return &Bus{subs: map[*Sub]struct{}{}} }

// Sub is one subscriber's ring of pending events.
type Sub struct {
	bus     *Bus
	mu      sync.Mutex
	ring    []trace.Event
	head, n int
	dropped int
	wake    chan struct{} // has an element when events are pending
}

// Subscribe returns a subscriber holding up to size pending events.
func (b *Bus) Subscribe(size int) *Sub {
	if size < 1 {
		size = 1
	}
	s := &Sub{bus: b, ring: make([]trace.Event, size), wake: make(chan struct{}, 1)}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Close unsubscribes s.
func (s *Sub) Close() {
	s.bus.mu.Lock()
	delete(s.bus.subs, s)
	s.bus.mu.Unlock()
}

// Publish hands e to every subscriber without blocking.
func (b *Bus) Publish(e trace.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		s.push(e)
	}
}

func (s *Sub) push(e trace.Event) {
	s.mu.Lock()
	if s.n == len(s.ring) {
		s.head = (s.head + 1) % len(s.ring) // overwrite the oldest
		s.n--
		s.dropped++
	}
	s.ring[(s.head+s.n)%len(s.ring)] = e
	s.n++
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Drain returns the pending events, oldest first, and how many were dropped
// since the last Drain.
func (s *Sub) Drain() (events []trace.Event, dropped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	events = make([]trace.Event, s.n)
	for i := range s.n {
		events[i] = s.ring[(s.head+i)%len(s.ring)]
	}
	s.head, s.n = 0, 0
	dropped, s.dropped = s.dropped, 0
	return events, dropped
}

// Wait returns a channel that has a value when events may be pending.
func (s *Sub) Wait() <-chan struct{} { return s.wake }
