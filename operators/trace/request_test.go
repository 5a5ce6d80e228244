package trace

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

// TestRequestRoundTrip: a Request published in process and one that came
// back through the JSON lines decode to the same payload, and the event
// keeps the schema.
func TestRequestRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		req  Request
	}{
		{"a write", Request{Verb: "update", Resource: "echoes/status", Code: 409, LatencyMS: 3.25, UserAgent: "echo-clientgo/a"}},
		{"a client that left", Request{Verb: "watch", Resource: "deployments", Code: 0, LatencyMS: 60000}},
		{"discovery", Request{Verb: "get", Resource: "discovery", Code: 200, LatencyMS: 0.5, UserAgent: "kubectl/v1.36.3"}},
		{"a write that changed nothing", Request{Verb: "update", Resource: "deployments", Code: 200, LatencyMS: 2, Unchanged: true,
			Differed: []string{"spec.strategy", "spec.template.spec.containers[0].terminationMessagePath", "3 more"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.req.Event(at, "proxy/clientgo/a", "echo-clientgo", "Echo/hello")
			if err := CheckSchema(e); err != nil {
				t.Fatalf("off the schema: %v", err)
			}
			if got, ok := e.Request(); !ok || !reflect.DeepEqual(got, tt.req) {
				t.Fatalf("in process: Request() = %+v, %v; want %+v", got, ok, tt.req)
			}
			var buf bytes.Buffer
			if err := Encode(&buf, e); err != nil {
				t.Fatal(err)
			}
			var back []Event
			if err := Decode(&buf, func(e Event) { back = append(back, e) }, func(l string) { t.Fatalf("malformed %q", l) }); err != nil {
				t.Fatal(err)
			}
			if len(back) != 1 {
				t.Fatalf("decoded %d events", len(back))
			}
			if got, ok := back[0].Request(); !ok || !reflect.DeepEqual(got, tt.req) {
				t.Fatalf("through JSON: Request() = %+v, %v; want %+v", got, ok, tt.req)
			}
		})
	}
	if _, ok := (Event{Kind: Kubectl, Payload: Command{Verb: "get echoes"}}).Request(); ok {
		t.Fatal("a kubectl event decoded as an api.request")
	}
}
