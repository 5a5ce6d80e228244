package trace

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestSchema: the schema derived from the payloads' tags is the one that
// was written out by hand before there were payloads, kind by kind, so the
// wire format did not change; and every kind has a payload.
func TestSchema(t *testing.T) {
	want := map[Kind][]string{
		InformerAdd:    {"resource", "initial", "mapped_to", "filtered"},
		InformerUpdate: {"resource", "change", "mapped_to", "filtered"},
		InformerDelete: {"resource", "mapped_to", "filtered"},
		QueueAdd:       {"key", "depth", "coalesced", "cause_event"},
		QueueGet:       {"key", "depth"},
		QueueDone:      {"key", "depth"},
		QueueRequeue:   {"key", "depth", "reason", "after_ms", "retries"},
		ReconcileStart: {"id", "cause", "cause_event", "causes"},
		ReconcileEnd:   {"id", "result", "duration_ms", "changed", "status", "error"},
		APIRequest:     {"verb", "resource", "code", "latency_ms", "user_agent", "unchanged", "differed"},
		APIWatchEvent:  {"resource", "type"},
		PollTick:       {"interval_s"},
		Kubectl:        {"verb", "code", "duration_ms"},
		LeaderAcquired: {"identity"},
		LeaderLost:     {"identity", "reason"},
		LeaderObserved: {"identity", "previous", "transitions", "lease"},
		GCCollected:    {"owner"},
		DriftDetected:  {"what", "echo"},
		DriftRepaired:  {"what", "echo", "latency_ms"},
		Finalizer:      {"action", "finalizer"},
		Handover:       {"path", "from", "to", "echo"},
		EchoDeleting:   {"finalizers"},
		EchoDeleted:    {"waited_ms"},
		Converged:      {"latency_ms", "generation", "echo", "created"},
		ProcessStart:   {"pid", "restarts"},
		ProcessExit:    {"pid", "restarts", "backoff_ms", "code", "signal", "removed"},
		ProcessPause:   {"pid"},
		ProcessResume:  {"pid"},
		Malformed:      {"line", "count"},
		Dropped:        {"count"},
		Log:            {"msg"},
		ClientLimits:   {"qps", "burst"},
		Act:            {"action", "style", "via"},
		FaultSet:       {"fault", "spec", "on"},
		FaultInjected:  {"fault", "verb", "resource", "type", "code", "delay_ms", "count"},
		StartupStep:    {"done", "next", "error"},
	}
	if len(Kinds()) != 36 {
		t.Errorf("%d kinds have a payload, want 36", len(Kinds()))
	}
	for k, keys := range want {
		got := slices.Clone(Schema[k])
		slices.Sort(got)
		keys = slices.Clone(keys)
		slices.Sort(keys)
		if !slices.Equal(got, keys) {
			t.Errorf("Schema[%s] = %v, want %v", k, got, keys)
		}
	}
	for _, k := range Kinds() {
		if _, ok := want[k]; !ok {
			t.Errorf("kind %s is new: add it here", k)
		}
	}
}

// TestDecodeBash: bash's trace() writes a value of digits as a JSON number
// and anything else as a string; each decodes into its typed field either
// way, and a misspelt key or a value that fits no field fails CheckSchema.
func TestDecodeBash(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    Payload
		offKeys string // "" if the event is on the schema
	}{
		{"numbers as numbers", `{"kind":"kubectl","fields":{"verb":"get echoes","code":0,"duration_ms":40}}`,
			Command{Verb: "get echoes", DurationMS: 40}, ""},
		{"numbers as strings", `{"kind":"kubectl","fields":{"verb":"get echoes","code":"1","duration_ms":"40.5"}}`,
			Command{Verb: "get echoes", Code: 1, DurationMS: 40.5}, ""},
		{"a string of digits written as a number", `{"kind":"reconcile.end","fields":{"id":3,"result":"ok","changed":"none","status":2,"error":404}}`,
			Reconcile{ID: 3, Result: "ok", Changed: "none", Status: "2", Error: "404"}, ""},
		{"booleans as strings", `{"kind":"informer.add","fields":{"resource":"Echo","initial":"true","filtered":"false"}}`,
			Informer{Resource: "Echo", Initial: true}, ""},
		{"a list", `{"kind":"api.request","fields":{"verb":"update","resource":"deployments","code":200,"latency_ms":1.5,"user_agent":"x","unchanged":true,"differed":"spec.a,2 more"}}`,
			Request{Verb: "update", Resource: "deployments", Code: 200, LatencyMS: 1.5, UserAgent: "x", Unchanged: true, Differed: []string{"spec.a", "2 more"}}, ""},
		{"a pointer", `{"kind":"process.exit","fields":{"pid":"7","restarts":0,"backoff_ms":500,"code":0}}`,
			Process{PID: 7, BackoffMS: 500, Code: ExitCode(0)}, ""},
		{"a typo", `{"kind":"poll.tick","fields":{"interval":5}}`, Poll{}, "interval"},
		{"a key of another kind of the family", `{"kind":"queue.get","fields":{"key":"a/b","depth":1,"reason":"error"}}`,
			Queue{Key: "a/b", Depth: 1}, "reason"},
		{"a word where a number goes", `{"kind":"queue.done","fields":{"key":"a/b","depth":"deep"}}`, Queue{Key: "a/b"}, "depth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseLine([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(e.Payload, tt.want) {
				t.Errorf("payload = %#v, want %#v", e.Payload, tt.want)
			}
			err = CheckSchema(e)
			if tt.offKeys == "" && err != nil {
				t.Errorf("CheckSchema: %v", err)
			}
			if tt.offKeys != "" && (err == nil || !strings.Contains(err.Error(), tt.offKeys)) {
				t.Errorf("CheckSchema = %v, want it to name %q", err, tt.offKeys)
			}
		})
	}
}

// An unknown kind keeps its fields, and the timeline still shows them.
func TestUnknownKind(t *testing.T) {
	e, err := ParseLine([]byte(`{"kind":"new.thing","fields":{"b":2,"a":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Summary(); got != "a=x b=2" {
		t.Errorf("Summary() = %q", got)
	}
	if CheckSchema(e) == nil {
		t.Error("an unknown kind passed CheckSchema")
	}
	if CheckSchema(Event{Kind: QueueAdd, Payload: Reconcile{}}) == nil {
		t.Error("a queue.add with a reconcile payload passed CheckSchema")
	}
}

// TestEncodeKeys: an event is written with the keys its producer wrote
// before payloads: a value that may be zero is written (a client that left:
// code 0), an optional one only when set, and a key of another kind of the
// family never.
func TestEncodeKeys(t *testing.T) {
	tests := []struct {
		name string
		e    Event
		want string // the fields object as written
	}{
		{"a request nobody answered", Event{Kind: APIRequest, Payload: Request{Verb: "watch", Resource: "echoes"}},
			`{"verb":"watch","resource":"echoes","code":0,"latency_ms":0,"user_agent":""}`},
		{"an unchanged update", Event{Kind: APIRequest, Payload: Request{Verb: "update", Code: 200, Unchanged: true, Differed: []string{"a", "b"}}},
			`{"verb":"update","resource":"","code":200,"latency_ms":0,"user_agent":"","unchanged":true,"differed":"a,b"}`},
		{"queue.get keeps to its keys", Event{Kind: QueueGet, Payload: Queue{Key: "ns/a", Depth: 0, Reason: "error", Coalesced: true}},
			`{"key":"ns/a","depth":0}`},
		{"queue.add says it did not coalesce", Event{Kind: QueueAdd, Payload: Queue{Key: "ns/a", Depth: 1}},
			`{"key":"ns/a","depth":1,"coalesced":false}`},
		{"an exit by a signal", Event{Kind: ProcessExit, Payload: Process{PID: 7, Restarts: 1, BackoffMS: 500, Signal: "killed"}},
			`{"pid":7,"restarts":1,"backoff_ms":500,"signal":"killed"}`},
		{"an exit with code 0", Event{Kind: ProcessExit, Payload: Process{PID: 7, Code: ExitCode(0), Removed: true}},
			`{"pid":7,"restarts":0,"code":0,"removed":true}`},
		{"a pause", Event{Kind: ProcessPause, Payload: Process{PID: 7, Restarts: 2}}, `{"pid":7}`},
		{"no payload", Event{Kind: ProcessStart}, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var line struct {
				Fields json.RawMessage `json:"fields"`
			}
			if err := json.Unmarshal(b, &line); err != nil {
				t.Fatal(err)
			}
			if string(line.Fields) != tt.want {
				t.Errorf("fields = %s, want %s", line.Fields, tt.want)
			}
		})
	}
}
