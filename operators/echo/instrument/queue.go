package instrument

import (
	"fmt"
	"time"

	"k8s.io/client-go/util/workqueue"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/trace"
)

// newTracedQueue is the rate-limiting workqueue both Go styles use, made
// visible: its depth is kept in depth, and every requeue (a rate-limited
// retry after an error, or a RequeueAfter) is recorded as the cause of the
// next reconcile of that key and emitted as queue.requeue with its backoff.
func newTracedQueue[T comparable](name string, rl workqueue.TypedRateLimiter[T], key func(T) string,
	causes *causeSet, em *Emitter, ns string, depth *queueDepth) workqueue.TypedRateLimitingInterface[T] {
	q := &tracedQueue[T]{key: key, causes: causes, em: em, ns: ns, depth: depth}
	q.TypedRateLimitingInterface = workqueue.NewTypedRateLimitingQueueWithConfig(
		&tracedLimiter[T]{TypedRateLimiter: rl, q: q},
		workqueue.TypedRateLimitingQueueConfig[T]{Name: name, MetricsProvider: depth},
	)
	return q
}

type tracedQueue[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	key    func(T) string
	causes *causeSet
	em     *Emitter
	ns     string
	depth  *queueDepth
}

func (q *tracedQueue[T]) requeued(item T, reason string, after time.Duration, retries int) {
	k := q.key(item)
	ev := fmt.Sprintf("requeue after %s", after)
	kind := trace.CauseAfter
	if reason == trace.ReasonError {
		kind = trace.CauseRequeue
		ev = fmt.Sprintf("retry %d after error, backoff %s", retries, after)
	}
	q.causes.Add(k, Cause{Kind: kind, Event: ev})
	q.em.Emit(trace.QueueRequeue, q.ns, q.object(k), trace.Queue{
		Key: k, Reason: reason, AfterMS: float64(after.Microseconds()) / 1000,
		Retries: retries, Depth: int(q.depth.Value()),
	})
}

// Add queues a key; the handler recorded its cause just before.
func (q *tracedQueue[T]) Add(item T) {
	q.TypedRateLimitingInterface.Add(item)
	k := q.key(item)
	last, waiting := q.causes.Last(k)
	q.em.Emit(trace.QueueAdd, q.ns, q.object(k), trace.Queue{
		Key: k, Depth: int(q.depth.Value()), Coalesced: waiting > 1, CauseEvent: last.Event,
	})
}

// Get hands a key to a worker (client-go's processNextWorkItem, or
// controller-runtime's own worker).
func (q *tracedQueue[T]) Get() (T, bool) {
	item, shutdown := q.TypedRateLimitingInterface.Get()
	if !shutdown {
		k := q.key(item)
		q.em.Emit(trace.QueueGet, q.ns, q.object(k), trace.Queue{Key: k, Depth: int(q.depth.Value())})
	}
	return item, shutdown
}

// Done lets the queue hand the key out again.
func (q *tracedQueue[T]) Done(item T) {
	q.TypedRateLimitingInterface.Done(item)
	k := q.key(item)
	q.em.Emit(trace.QueueDone, q.ns, q.object(k), trace.Queue{Key: k, Depth: int(q.depth.Value())})
}

// object is what a key's events are about: "Echo/hello".
func (q *tracedQueue[T]) object(k string) string { return trace.Object(echov1.Kind, objectName(k)) }

// AddAfter is a RequeueAfter (controller-runtime) or an explicit delay.
func (q *tracedQueue[T]) AddAfter(item T, d time.Duration) {
	q.requeued(item, trace.ReasonAfter, d, 0)
	q.TypedRateLimitingInterface.AddAfter(item, d)
}

// tracedLimiter learns the backoff the queue's rate limiter chose for an
// error retry: AddRateLimited asks When(item) for exactly that.
type tracedLimiter[T comparable] struct {
	workqueue.TypedRateLimiter[T]
	q *tracedQueue[T]
}

func (l *tracedLimiter[T]) When(item T) time.Duration {
	d := l.TypedRateLimiter.When(item)
	l.q.requeued(item, trace.ReasonError, d, l.TypedRateLimiter.NumRequeues(item))
	return d
}

// objectName is the name part of a namespace/name key.
func objectName(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[i+1:]
		}
	}
	return key
}
