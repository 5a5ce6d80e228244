package bus

import (
	"sync"

	"github.com/kkloud/rlab/operators/trace"
)

// Collector hands a subscription's events to a function from its own
// goroutine, in bus order: the subscribe, wait, drain loop every consumer of
// the bus needs, written once.
type Collector struct {
	sub *Sub
	fn  func(evs []trace.Event, dropped int)
	// mu is held across each drain and its delivery, so deliveries never
	// overlap and never reach fn out of order, whoever drains.
	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Collect subscribes to b with a ring of size events and delivers them to fn
// until Close. See Sub.Collect.
func (b *Bus) Collect(size int, fn func(evs []trace.Event, dropped int)) *Collector {
	return b.Subscribe(size).Collect(fn)
}

// Collect delivers s's events to fn until Close: each batch oldest first,
// with how many were dropped before it (the ring was full). fn is called
// from one goroutine at a time, never with an empty batch and no drops; it
// must not call Flush or Close. The collector owns s from now on: Close
// closes it.
//
// A subscription made earlier (before a sandbox starts, so that nothing is
// missed) can be collected later: what it holds by then comes first.
func (s *Sub) Collect(fn func(evs []trace.Event, dropped int)) *Collector {
	c := &Collector{sub: s, fn: fn, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

func (c *Collector) run() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.sub.Wait():
			c.Flush()
		}
	}
}

// Flush drains what the subscription holds now and delivers it before it
// returns, so that a caller asking what has been published so far (a
// check, right after a request went through a proxy) sees all of it.
func (c *Collector) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	evs, dropped := c.sub.Drain()
	if len(evs) == 0 && dropped == 0 {
		return
	}
	c.fn(evs, dropped)
}

// Close stops collecting: it unsubscribes, then delivers what was still
// pending, so every event published before Close reaches fn (and nothing
// after). Once Close returns fn is not called again. Close may be called
// more than once.
func (c *Collector) Close() {
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		c.sub.Close()
		c.Flush()
	})
}
