package instrument

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kkloud/rlab/operators/trace"
)

// Emitter writes trace events as JSON lines. Emit never blocks the caller
// (informer handlers, workqueue hooks under the queue lock): events go
// through a bounded buffer, and when it is full they are dropped and counted,
// and the count itself is reported as a trace.dropped event.
type Emitter struct {
	source  string
	ch      chan trace.Event
	dropped atomic.Int64
	done    chan struct{}
	// mu guards closed: a worker still finishing its reconcile may emit
	// after Close, and its events are then dropped, not a panic.
	mu     sync.RWMutex
	closed bool
}

// NewEmitter starts an emitter writing to w; a nil w gives a no-op emitter.
func NewEmitter(w io.Writer, source string) *Emitter {
	e := &Emitter{source: source}
	if w == nil {
		return e
	}
	e.ch = make(chan trace.Event, 4096)
	e.done = make(chan struct{})
	go e.write(w)
	return e
}

func (e *Emitter) write(w io.Writer) {
	defer close(e.done)
	for ev := range e.ch {
		if n := e.dropped.Swap(0); n > 0 {
			_ = trace.Encode(w, trace.Event{Time: ev.Time, Source: e.source, Kind: trace.Dropped, Payload: trace.Loss{Count: int(n)}})
		}
		_ = trace.Encode(w, ev)
	}
}

// Emit records one event about ns/object.
func (e *Emitter) Emit(kind trace.Kind, ns, object string, p trace.Payload) {
	if e == nil || e.ch == nil {
		return
	}
	ev := trace.Event{Time: time.Now(), Source: e.source, Kind: kind, Namespace: ns, Object: object, Payload: p}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		e.dropped.Add(1)
		return
	}
	select {
	case e.ch <- ev:
	default:
		e.dropped.Add(1)
	}
}

// Close flushes what is buffered; what is emitted afterwards is dropped.
func (e *Emitter) Close() {
	if e == nil || e.ch == nil {
		return
	}
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.ch)
	}
	e.mu.Unlock()
	<-e.done
}

// EmitClientLimits records the client-side rate limit the replica's clients
// run with, as client-go applies it: an unset QPS or Burst (0) means
// rest.DefaultQPS (5 req/s) and rest.DefaultBurst (10); a negative QPS, no
// limit at all. Every client built from cfg has a limiter of its own (a
// clientset one per API group while QPS is unset); TestEmitClientLimits
// holds this to the limiters client-go builds.
func (e *Emitter) EmitClientLimits(ns string, cfg *rest.Config) {
	qps, burst := float64(cfg.QPS), cfg.Burst
	if qps == 0 {
		qps = float64(rest.DefaultQPS)
	}
	if burst == 0 {
		burst = rest.DefaultBurst
	}
	e.Emit(trace.ClientLimits, ns, "", trace.Limits{QPS: qps, Burst: burst})
}
