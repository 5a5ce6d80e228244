package check

import (
	"strings"
	"testing"
	"time"
)

// TestTrailOf: a trail holds one object's writes, and marks an attempt a
// watch event about the Echo or its children may have brought; events
// about other objects, or to another replica, do not count.
func TestTrailOf(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := func(ms int, object string, code int) Request {
		return Request{Time: at(ms), Replica: "a", Verb: "update", Resource: "deployments", Object: object, Code: code}
	}
	tests := []struct {
		name       string
		deliveries []Delivery
		wantWoken  []bool
		wantWaits  int
	}{
		{name: "no event: both retries", wantWoken: []bool{false, false, false}, wantWaits: 2},
		{name: "an event about its Deployment", deliveries: []Delivery{{Time: at(7), Replica: "a", Object: "Deployment/echo-x"}},
			wantWoken: []bool{false, true, false}, wantWaits: 1},
		{name: "an event about a Pod of it", deliveries: []Delivery{{Time: at(20), Replica: "a", Object: "Pod/echo-x-5d9f-abc"}},
			wantWoken: []bool{false, false, true}, wantWaits: 1},
		{name: "an event about another Echo", deliveries: []Delivery{{Time: at(7), Replica: "a", Object: "Echo/hello"}},
			wantWoken: []bool{false, false, false}, wantWaits: 2},
		{name: "an event to another replica", deliveries: []Delivery{{Time: at(7), Replica: "b", Object: "Echo/x"}},
			wantWoken: []bool{false, false, false}, wantWaits: 2},
	}
	reqs := []Request{
		w(0, "Deployment/echo-x", 409),
		{Time: at(2), Replica: "a", Verb: "get", Resource: "deployments", Object: "Deployment/echo-x", Code: 200}, // a read is no attempt
		w(5, "Deployment/echo-y", 409), // another object
		w(10, "Deployment/echo-x", 409),
		w(30, "Deployment/echo-x", 200),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trailOf(reqs, tt.deliveries, "deployments", "Deployment/echo-x", "x")
			if len(tr.tries) != len(tt.wantWoken) {
				t.Fatalf("%d tries, want %d: %+v", len(tr.tries), len(tt.wantWoken), tr.tries)
			}
			for i, want := range tt.wantWoken {
				if tr.tries[i].woken != want {
					t.Errorf("try %d woken %v, want %v", i, tr.tries[i].woken, want)
				}
			}
			if waits, _ := tr.retries(); len(waits) != tt.wantWaits {
				t.Errorf("%d retries %v, want %d", len(waits), waits, tt.wantWaits)
			}
			if _, refused := tr.lastRefused(); refused {
				t.Error("the last try succeeded, yet lastRefused says refused")
			}
		})
	}
}

// TestRewriteFinding: writes that changed nothing are named by object,
// with the fields that differed; more than one to the same object fails
// the finding (a rewrite on every pass), a single one does not.
func TestRewriteFinding(t *testing.T) {
	w := func(verb, resource, object string, unchanged bool, differed ...string) Request {
		return Request{Verb: verb, Resource: resource, Object: object, Code: 200, Unchanged: unchanged, Differed: differed}
	}
	deploy := w("update", "deployments", "Deployment/echo-hello", true, "spec.progressDeadlineSeconds", "spec.strategy", "9 more")
	status := w("update", "echoes/status", "Echo/hello", true)
	tests := []struct {
		name string
		reqs []Request
		pass bool
		want string
	}{
		{name: "every write changed something", pass: true, reqs: []Request{w("create", "deployments", "", false), w("update", "echoes/status", "Echo/hello", false)},
			want: "each of its 2 writes changed something"},
		{name: "one now and then", pass: true, reqs: []Request{w("create", "deployments", "", false), status},
			want: "1 of its 2 writes changed nothing: update Echo/hello status 1× of 1 (the status it already had)"},
		// A lagging cache: the status written again before the watch
		// brought the last write back, now and then.
		{name: "a few among many", pass: true, reqs: []Request{w("update", "echoes/status", "Echo/hello", false), status, w("update", "echoes/status", "Echo/hello", false),
			status, w("update", "echoes/status", "Echo/hello", false), status, w("update", "echoes/status", "Echo/hello", false)},
			want: "3 of its 7 writes changed nothing: update Echo/hello status 3× of 7"},
		{name: "the book's whole spec", reqs: []Request{w("create", "deployments", "", false), deploy, status, deploy, status, deploy},
			want: "5 of its 6 writes changed nothing: update Deployment/echo-hello 3× of 3 (what it sent differed from the stored object in " +
				"spec.progressDeadlineSeconds, spec.strategy and 9 more); update Echo/hello status 2× of 2 (the status it already had): it rewrites on every pass"},
		{name: "refused and Lease writes do not count", pass: true, reqs: []Request{
			{Verb: "update", Resource: "deployments", Object: "Deployment/echo-hello", Code: 409},
			w("update", "leases", "Lease/x", true), w("update", "leases", "Lease/x", true)},
			want: "each of its 0 writes changed something"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pass, reason, err := rewriteFinding(tt.reqs)
			if err != nil {
				t.Fatal(err)
			}
			if pass != tt.pass || !strings.Contains(reason, tt.want) {
				t.Errorf("rewriteFinding = %v, %q; want %v, %q", pass, reason, tt.pass, tt.want)
			}
		})
	}
}
