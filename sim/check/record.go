package check

import (
	"strings"
	"sync"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
)

// Recorder keeps what an operator's proxies saw: every request (and watch
// event) of its replicas. Made before the sandbox starts, it misses nothing,
// not even the operator's first list.
type Recorder struct {
	st  style.Style
	sub *bus.Sub

	mu     sync.Mutex
	events []trace.Event
	lost   int
	stop   chan struct{}
	done   chan struct{}
}

// NewRecorder starts recording style st's proxy events from b until Close.
func NewRecorder(b *bus.Bus, st style.Style) *Recorder {
	r := &Recorder{st: st, sub: b.Subscribe(1 << 16), stop: make(chan struct{}), done: make(chan struct{})}
	go r.run()
	return r
}

func (r *Recorder) run() {
	defer close(r.done)
	for {
		select {
		case <-r.stop:
			return
		case <-r.sub.Wait():
		}
		r.flush()
	}
}

// Close stops recording.
func (r *Recorder) Close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
		<-r.done
		r.sub.Close()
	}
}

// flush takes in what the bus holds now, so that a request the proxy has
// published is seen by the check that asks next.
func (r *Recorder) flush() {
	prefix := "proxy/" + string(r.st) + "/"
	r.mu.Lock() // held across the drain: events are kept in bus order
	defer r.mu.Unlock()
	evs, lost := r.sub.Drain()
	r.lost += lost
	for _, e := range evs {
		if strings.HasPrefix(e.Source, prefix) {
			r.events = append(r.events, e)
		}
	}
}

// Requests are the API requests made since t (zero: all), oldest first.
func (r *Recorder) Requests(since time.Time) []Request {
	r.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Request
	for _, e := range r.events {
		if e.Kind != trace.APIRequest || e.Time.Before(since) {
			continue
		}
		code, _ := e.Num(trace.FieldCode)
		out = append(out, Request{
			Time: e.Time, Replica: strings.TrimPrefix(e.Source, "proxy/"+string(r.st)+"/"),
			Verb: e.Str(trace.FieldVerb), Resource: e.Str(trace.FieldResource), Object: e.Object, Code: int(code),
		})
	}
	return out
}

// Lost is how many bus events were dropped before the recorder read them.
func (r *Recorder) Lost() int {
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
	Object   string // "Deployment/echo-hello", or ""
	Code     int
}

// Key is "verb resource".
func (q Request) Key() string { return q.Verb + " " + q.Resource }

// Write says whether the request asks to change something.
func (q Request) Write() bool {
	switch q.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// Housekeeping says whether the request is leader election or an Event:
// writes that change no Echo's children.
func (q Request) Housekeeping() bool {
	r, _, _ := strings.Cut(q.Resource, "/")
	return r == "leases" || r == "events"
}
