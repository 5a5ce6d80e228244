package instrument

import (
	"sync"
	"sync/atomic"

	"k8s.io/client-go/util/workqueue"

	"github.com/kkloud/rlab/operators/trace"
)

// Cause is why a key was put on the workqueue: the answer to "why did
// reconcile run (again)?".
type Cause struct {
	Kind  string // trace.CauseEvent, CauseRequeue, ...
	Event string // e.g. "UPDATE Deployment/echo-hello → Echo/hello", "error, backoff 20ms"
}

// causeSet remembers, per queue key, the causes that are waiting for the next
// reconcile of that key. The queue de-duplicates keys; this keeps what the
// de-duplication merged, so a trace can say one reconcile answered 3 events.
type causeSet struct {
	mu      sync.Mutex
	pending map[string][]Cause
}

// newCauses returns an empty tracker.
func newCauses() *causeSet { return &causeSet{pending: map[string][]Cause{}} }

// Add records c for key and returns how many causes now wait for it.
func (c *causeSet) Add(key string, cause Cause) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[key] = append(c.pending[key], cause)
	return len(c.pending[key])
}

// Last returns the newest cause waiting for key and how many wait.
func (c *causeSet) Last(key string) (Cause, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.pending[key]
	if len(cs) == 0 {
		return Cause{}, 0
	}
	return cs[len(cs)-1], len(cs)
}

// Take returns and forgets the causes waiting for key.
func (c *causeSet) Take(key string) []Cause {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.pending[key]
	delete(c.pending, key)
	return cs
}

// startPayload is the reconcile.start payload for the causes a reconcile answers.
func startPayload(id int64, cs []Cause) trace.Reconcile {
	f := trace.Reconcile{ID: int(id), Causes: len(cs)}
	if len(cs) > 0 {
		f.Cause, f.CauseEvent = cs[0].Kind, cs[0].Event
	} else {
		// Nothing recorded it: the informer's periodic resync, or an add the
		// trace did not see.
		f.Cause = trace.CauseResync
	}
	return f
}

// queueDepth is a workqueue.MetricsProvider that keeps only the queue depth, in an
// atomic: its methods run under the queue's lock, so they must not block.
type queueDepth struct{ n atomic.Int64 }

// Value is the number of keys ready in the queue (not counting delayed ones).
func (d *queueDepth) Value() int64 { return d.n.Load() }

type depthGauge struct{ d *queueDepth }

func (g depthGauge) Inc() { g.d.n.Add(1) }
func (g depthGauge) Dec() { g.d.n.Add(-1) }

type noop struct{}

func (noop) Inc()            {}
func (noop) Observe(float64) {}
func (noop) Set(float64)     {}

// NewDepthMetric implements workqueue.MetricsProvider.
func (d *queueDepth) NewDepthMetric(string) workqueue.GaugeMetric { return depthGauge{d} }

// NewAddsMetric implements workqueue.MetricsProvider.
func (d *queueDepth) NewAddsMetric(string) workqueue.CounterMetric { return noop{} }

// NewLatencyMetric implements workqueue.MetricsProvider.
func (d *queueDepth) NewLatencyMetric(string) workqueue.HistogramMetric { return noop{} }

// NewWorkDurationMetric implements workqueue.MetricsProvider.
func (d *queueDepth) NewWorkDurationMetric(string) workqueue.HistogramMetric { return noop{} }

// NewUnfinishedWorkSecondsMetric implements workqueue.MetricsProvider.
func (d *queueDepth) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noop{}
}

// NewLongestRunningProcessorSecondsMetric implements workqueue.MetricsProvider.
func (d *queueDepth) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noop{}
}

// NewRetriesMetric implements workqueue.MetricsProvider.
func (d *queueDepth) NewRetriesMetric(string) workqueue.CounterMetric { return noop{} }
