package check

import (
	"strings"
	"sync"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
)

// RequestLog keeps what an operator's proxies saw: every request (and watch
// event) of its replicas. Made before the sandbox starts, it misses nothing,
// not even the operator's first list.
type RequestLog struct {
	st     style.Style
	prefix string // of the sources recorded: "proxy/clientgo/"
	col    *bus.Collector

	mu     sync.Mutex
	events []trace.Event
	lost   int
}

// NewRequestLog starts recording style st's proxy events from b until Close.
func NewRequestLog(b *bus.Bus, st style.Style) *RequestLog {
	return NewRequestLogOf(b, st, "proxy/")
}

// NewRequestLogOf records the requests of style st that sources under
// prefix publish: "proxy/" for its proxies, ship.SourcePrefix for an
// operator in the cluster, whose requests the audit log tells.
func NewRequestLogOf(b *bus.Bus, st style.Style, sources string) *RequestLog {
	prefix := sources + string(st) + "/"
	r := &RequestLog{st: st, prefix: prefix}
	r.col = b.Collect(1<<16, func(evs []trace.Event, lost int) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.lost += lost
		for _, e := range evs {
			if strings.HasPrefix(e.Source, prefix) {
				r.events = append(r.events, e)
			}
		}
	})
	return r
}

// Close stops recording; what was published before it is kept.
func (r *RequestLog) Close() { r.col.Close() }

// flush takes in what the bus holds now, so that a request the proxy has
// published is seen by the check that asks next.
func (r *RequestLog) flush() { r.col.Flush() }

// Requests are the API requests made since t (zero: all), oldest first.
func (r *RequestLog) Requests(since time.Time) []Request {
	r.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Request
	for _, e := range r.events {
		q, ok := e.Request()
		if !ok || e.Time.Before(since) {
			continue
		}
		out = append(out, Request{
			Time: e.Time, Replica: strings.TrimPrefix(e.Source, r.prefix),
			Verb: q.Verb, Resource: q.Resource, Namespace: e.Namespace, Object: e.Object, Code: q.Code,
			Unchanged: q.Unchanged, Differed: q.Differed,
		})
	}
	return out
}

// Deliveries are the watch events the operator's replicas were sent since
// t (zero: all), oldest first.
func (r *RequestLog) Deliveries(since time.Time) []Delivery {
	r.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Delivery
	for _, e := range r.events {
		if e.Kind != trace.APIWatchEvent || e.Time.Before(since) {
			continue
		}
		out = append(out, Delivery{Time: e.Time, Replica: strings.TrimPrefix(e.Source, r.prefix), Object: e.Object})
	}
	return out
}

// Delivery is one watch event a replica's proxy delivered to it.
type Delivery struct {
	Time    time.Time
	Replica string
	Object  string // "Deployment/echo-hello"
}

// Lost is how many bus events were dropped before the recorder read them.
func (r *RequestLog) Lost() int {
	r.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}

// Request is one API request of the operator, as its proxy saw it.
type Request struct {
	Time     time.Time
	Replica  string // "a"
	Verb     string // "get", "list", "watch", "create", "patch", ...
	Resource string // "deployments", "echoes/status", "discovery"
	// Namespace is the request's: "" for a request across all namespaces
	// (or about a cluster-scoped object, or not about a resource).
	Namespace string
	Object    string // "Deployment/echo-hello", or ""
	Code      int
	// Unchanged: a write answered 2xx that changed nothing; Differed, for
	// such an update, the fields sent otherwise than the apiserver keeps
	// them (trace.Request).
	Unchanged bool
	Differed  []string
}

// Key is "verb resource".
func (q Request) Key() string { return q.Verb + " " + q.Resource }

// Write says whether the request asks to change something.
func (q Request) Write() bool { return trace.IsWriteVerb(q.Verb) }

// Refused says whether the apiserver (or a fault) turned the request down
// in a way a client should try again: a conflict, too many requests, a
// server error.
func (q Request) Refused() bool { return q.Code == 409 || q.Code == 429 || q.Code/100 == 5 }

// Housekeeping says whether the request is leader election or an Event:
// writes that change no Echo's children.
func (q Request) Housekeeping() bool { return trace.IsHousekeepingResource(q.Resource) }
