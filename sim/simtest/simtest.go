// Package simtest holds the helpers every test of rlab shares: a condition
// polled with a deadline (never a sleep), a recorder of trace events, and a
// buffer that is safe to write from a child's output goroutine.
package simtest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/poll"
)

// The fast tier, `make test-unit`, is `go test -short -race ./...`: every
// test that needs no control plane. A test that starts or uses one says so
// with NeedsControlPlane, and `make test` runs it.

// NeedsControlPlane skips t in the fast tier: it needs a real control plane
// (or a cluster, or rlab built to start one), which `make test` gives it.
func NeedsControlPlane(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane: make test runs it, make test-unit does not")
	}
}

// FastMain is for a TestMain whose setup starts a control plane or builds
// rlab for one: in the fast tier it runs the tests without that setup
// (each test that needs it skips itself) and returns true with the exit
// code; otherwise it returns false and the TestMain goes on.
func FastMain(m *testing.M) (int, bool) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if !testing.Short() {
		return 0, false
	}
	return m.Run(), true
}

// Interval is how often Eventually asks its condition.
const Interval = 20 * time.Millisecond

// Eventually polls cond until it says true, and fails t if timeout passes
// first, naming what it waited for and the condition's last error.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := Poll(t.Context(), timeout, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Poll is Eventually for callers that are not a test (benchmarks that must
// stop their timer, helpers returning an error): it polls cond until true and
// returns an error naming the deadline and the condition's last error.
func Poll(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	if err := poll.Until(ctx, Interval, timeout, "", cond); err != nil {
		return fmt.Errorf("not within %s: %w", timeout, err)
	}
	return nil
}

// True adapts a condition that cannot fail.
func True(cond func() bool) func(context.Context) (bool, error) { return poll.True(cond) }

// EventLog keeps every trace event it is given, in order.
type EventLog struct {
	mu  sync.Mutex
	evs []trace.Event
}

// Publish records e; it has the signature of the publishers in sim.
func (r *EventLog) Publish(e trace.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}

// Run records what sub delivers until ctx ends, then what sub still held;
// it closes sub.
func (r *EventLog) Run(ctx context.Context, sub *bus.Sub) {
	c := sub.Collect(func(evs []trace.Event, _ int) {
		r.mu.Lock()
		r.evs = append(r.evs, evs...)
		r.mu.Unlock()
	})
	<-ctx.Done()
	c.Close()
}

// All returns a copy of every event so far.
func (r *EventLog) All() []trace.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]trace.Event(nil), r.evs...)
}

// Of returns the events of one kind, in order.
func (r *EventLog) Of(kind trace.Kind) []trace.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []trace.Event
	for _, e := range r.evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// Count is how many events of kind came from source, or are about object
// source ("" counts them all).
func (r *EventLog) Count(kind trace.Kind, source string) int {
	n := 0
	for _, e := range r.Of(kind) {
		if source == "" || e.Source == source || e.Object == source {
			n++
		}
	}
	return n
}

// Wait returns the first event of kind about object ("" for any) that match
// accepts (nil for any), waiting up to timeout for it.
func (r *EventLog) Wait(t testing.TB, timeout time.Duration, kind trace.Kind, object string, match func(trace.Event) bool) trace.Event {
	t.Helper()
	var got trace.Event
	Eventually(t, timeout, fmt.Sprintf("%s %s", kind, object), func(context.Context) (bool, error) {
		evs := r.Of(kind)
		for _, e := range evs {
			if (object == "" || e.Object == object) && (match == nil || match(e)) {
				got = e
				return true, nil
			}
		}
		return false, fmt.Errorf("%d %s events so far, none matches", len(evs), kind)
	})
	return got
}

// None fails t if any event of kind was recorded.
func (r *EventLog) None(t testing.TB, kind trace.Kind) {
	t.Helper()
	if evs := r.Of(kind); len(evs) > 0 {
		t.Errorf("want no %s events, got %v", kind, evs)
	}
}

// CheckSchema fails t once for each recorded event that carries a field its
// kind does not (trace.Schema): its producer wrote a key by hand.
func (r *EventLog) CheckSchema(t testing.TB) {
	t.Helper()
	for _, e := range r.All() {
		if err := trace.CheckSchema(e); err != nil {
			t.Errorf("event from %s: %v", e.Source, err)
		}
	}
}

// Buffer is a bytes.Buffer safe for one writer goroutine and readers.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// T0 is when the tests' made-up traces start.
var T0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// At is ms milliseconds after T0.
func At(ms int) time.Time { return T0.Add(time.Duration(ms) * time.Millisecond) }

// Ev is a made-up trace event at At(ms).
func Ev(ms int, source string, kind trace.Kind, ns, obj string, p trace.Payload) trace.Event {
	return trace.Event{Time: At(ms), Source: source, Kind: kind, Namespace: ns, Object: obj, Payload: p}
}
