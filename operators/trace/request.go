package trace

import (
	"strings"
	"time"
)

// Request is the payload of an api.request event: one request to the
// apiserver, as the proxy in front of the replica (or of the student) saw
// it. It is the first kind with a payload type of its own: producers build
// the event from it and readers decode it, instead of reading Fields by
// name.
type Request struct {
	Verb      string  // "get", "list", "watch", "create", "update", "patch", "delete"
	Resource  string  // "deployments", "echoes/status", "discovery"
	Code      int     // the HTTP code; 0 if the client left before an answer
	LatencyMS float64 // until the answer (a watch: until it ended)
	UserAgent string
	// Unchanged: an update or patch answered 2xx that changed nothing (the
	// object kept its resourceVersion). Differed: for such an update, the
	// fields in which what was sent and what came back differ ("2 more"
	// last when there were more).
	Unchanged bool
	Differed  []string
}

// Event is r as the api.request event source published about object in
// namespace ns at t.
func (r Request) Event(t time.Time, source, ns, object string) Event {
	e := Event{Time: t, Source: source, Kind: APIRequest, Namespace: ns, Object: object,
		Fields: map[string]any{
			FieldVerb:      r.Verb,
			FieldResource:  r.Resource,
			FieldCode:      r.Code,
			FieldLatencyMS: r.LatencyMS,
			FieldUserAgent: r.UserAgent,
		}}
	if r.Unchanged {
		e.Fields[FieldUnchanged] = true
	}
	if len(r.Differed) > 0 {
		e.Fields[FieldDiffered] = strings.Join(r.Differed, ",")
	}
	return e
}

// Request decodes e's payload; ok is false if e is not an api.request. It
// reads what a proxy wrote in process (ints) and what came back through
// JSON (float64s) alike.
func (e Event) Request() (r Request, ok bool) {
	if e.Kind != APIRequest {
		return Request{}, false
	}
	latency, _ := e.Num(FieldLatencyMS)
	r = Request{Verb: e.Verb(), Resource: e.Resource(), Code: e.Code(), LatencyMS: latency,
		UserAgent: e.Str(FieldUserAgent), Unchanged: e.Bool(FieldUnchanged)}
	if d := e.Str(FieldDiffered); d != "" {
		r.Differed = strings.Split(d, ",")
	}
	return r, true
}
