package trace

import "time"

// Request is the payload of an api.request event: one request to the
// apiserver, as the proxy in front of the replica (or of the student) saw
// it.
type Request struct {
	Verb      string  `json:"verb"`       // "get", "list", "watch", "create", "update", "patch", "delete"
	Resource  string  `json:"resource"`   // "deployments", "echoes/status", "discovery"
	Code      int     `json:"code"`       // the HTTP code; 0 if the client left before an answer
	LatencyMS float64 `json:"latency_ms"` // until the answer (a watch: until it ended)
	UserAgent string  `json:"user_agent"`
	// Unchanged: an update or patch answered 2xx that changed nothing (the
	// object kept its resourceVersion). Differed: for such an update, the
	// fields in which what was sent and what came back differ ("2 more"
	// last when there were more); comma-separated on the wire.
	Unchanged bool     `json:"unchanged,omitempty"`
	Differed  []string `json:"differed,omitempty"`
}

// Event is r as the api.request event source published about object in
// namespace ns at t.
func (r Request) Event(t time.Time, source, ns, object string) Event {
	return New(t, source, APIRequest, ns, object, r)
}
