package instrument

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestTracedQueue: adds are coalesced and say so, a rate-limited retry is
// recorded as the next reconcile's cause with its backoff, and depth follows
// the queue.
func TestTracedQueue(t *testing.T) {
	out := &simtest.Buffer{}
	em := NewEmitter(out, "clientgo/a")
	causes := newCauses()
	depth := &queueDepth{}
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Second)
	q := newTracedQueue("echo", rl, func(k string) string { return k }, causes, em, "ns", depth)
	defer q.ShutDown()

	for _, ev := range []string{"UPDATE Echo/hello", "UPDATE Deployment/echo-hello → Echo/hello"} {
		causes.Add("ns/hello", Cause{Kind: trace.CauseEvent, Event: ev})
		q.Add("ns/hello")
	}
	if q.Len() != 1 || depth.Value() != 1 {
		t.Fatalf("two adds of one key: len %d depth %d, want 1 1", q.Len(), depth.Value())
	}
	key, _ := q.Get()
	if depth.Value() != 0 {
		t.Fatalf("depth after Get = %d", depth.Value())
	}
	cs := causes.Take(key)
	if f := startPayload(1, cs); f.Causes != 2 || f.CauseEvent != "UPDATE Echo/hello" {
		t.Fatalf("start fields %v", f)
	}
	q.AddRateLimited(key) // the reconcile failed
	q.Done(key)
	got, _ := q.Get() // after the 5 ms backoff
	cs = causes.Take(got)
	if len(cs) != 1 || cs[0].Kind != trace.CauseRequeue || !strings.Contains(cs[0].Event, "backoff 5ms") {
		t.Fatalf("requeue cause = %+v", cs)
	}
	q.Done(got)
	em.Close()

	var kinds []string
	_ = trace.Decode(strings.NewReader(out.String()), func(e trace.Event) {
		q := trace.As[trace.Queue](e)
		said := q.Reason
		if e.Kind == trace.QueueAdd { // queue.add says whether it coalesced, either way
			said = strconv.FormatBool(q.Coalesced) + said
		}
		kinds = append(kinds, string(e.Kind)+":"+said)
	}, func(l string) { t.Fatalf("malformed %q", l) })
	if want := "queue.add:false queue.add:true queue.get: queue.requeue:error queue.done: queue.get: queue.done:"; strings.Join(kinds, " ") != want {
		t.Fatalf("trace kinds %q, want %q", strings.Join(kinds, " "), want)
	}
}

func TestEmitterDropsInsteadOfBlocking(t *testing.T) {
	r, w := io.Pipe()
	em := NewEmitter(w, "x")
	start := time.Now()
	for range 10000 { // nobody reads yet: the buffer fills, the rest is dropped
		em.Emit(trace.Log, "", "", nil)
	}
	if time.Since(start) > time.Second {
		t.Fatal("Emit blocked")
	}
	read := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); read <- b }()
	em.Close()
	w.Close()
	var dropped float64
	_ = trace.Decode(bytes.NewReader(<-read), func(e trace.Event) {
		if e.Kind == trace.Dropped {
			n := float64(trace.As[trace.Loss](e).Count)
			dropped += n
		}
	}, func(string) {})
	if dropped == 0 {
		t.Fatal("the drops were not reported as a trace.dropped event")
	}
}

// A worker finishing its reconcile after the operator lost the Lease emits
// after Close: that must be dropped, not a panic (it once crashed a replica
// mid-cleanup), and what was emitted before Close is written.
func TestEmitterAfterClose(t *testing.T) {
	var buf bytes.Buffer
	em := NewEmitter(&buf, "x")
	em.Emit(trace.Log, "ns", "Echo/a", trace.Message{Msg: "before"})
	em.Close()
	em.Emit(trace.Log, "ns", "Echo/a", trace.Message{Msg: "after"})
	em.Close() // twice is fine
	var msgs []string
	_ = trace.Decode(&buf, func(e trace.Event) { msgs = append(msgs, trace.As[trace.Message](e).Msg) }, func(string) {})
	if len(msgs) != 1 || msgs[0] != "before" {
		t.Fatalf("written %q, want only the event emitted before Close", msgs)
	}
}
