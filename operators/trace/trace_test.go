package trace

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEncodeParseRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 22, 9, 41, 3, 211e6, time.UTC)
	tests := []Event{
		{Time: at, Source: "clientgo/a", Kind: ReconcileEnd, Namespace: "echo-clientgo", Object: "Echo/hello",
			Payload: Reconcile{Result: "ok", DurationMS: 3.25, Status: "2/2"}},
		{Time: at, Source: "world", Kind: GCCollected, Object: "Deployment/echo-hello", Payload: GC{Owner: "Echo/hello"}},
		{Time: at, Source: "supervisor", Kind: ProcessExit, Object: "clientgo/a", Payload: Process{PID: 4121, Restarts: 1, BackoffMS: 500, Code: ExitCode(2)}},
		{Time: at, Source: "proxy/clientgo/a", Kind: APIRequest, Payload: Request{Verb: "update", Resource: "deployments", Code: 200, Unchanged: true, Differed: []string{"a", "b"}}},
		{Time: at, Source: "supervisor", Kind: ProcessStart},
	}
	for _, want := range tests {
		t.Run(string(want.Kind), func(t *testing.T) {
			var buf bytes.Buffer
			if err := Encode(&buf, want); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(buf.String(), "}\n") || strings.Count(buf.String(), "\n") != 1 {
				t.Fatalf("not one JSON line: %q", buf.String())
			}
			got, err := ParseLine(bytes.TrimSpace(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			wantPayload := want.Payload
			if wantPayload == nil { // a kind with no fields set decodes to its zero payload
				wantPayload = payloadOf[want.Kind]
			}
			if !got.Time.Equal(want.Time) || got.Source != want.Source || got.Kind != want.Kind ||
				got.Object != want.Object || got.Line() != want.Line() || !reflect.DeepEqual(got.Payload, wantPayload) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDecodeCountsMalformed(t *testing.T) {
	in := strings.Join([]string{
		`{"source":"shell/a","kind":"poll.tick","fields":{"interval_s":5}}`,
		`not json at all`,
		`{"source":"shell/a"}`, // no kind
		``,
		`{"kind":"log","fields":{"msg":"` + strings.Repeat("x", MaxLine) + `"}}`, // too long
		`{"source":"shell/a","kind":"reconcile.end","fields":{"result":"ok"}}`,
	}, "\n")
	var good []Event
	var bad []string
	if err := Decode(strings.NewReader(in), func(e Event) { good = append(good, e) }, func(l string) { bad = append(bad, l) }); err != nil {
		t.Fatal(err)
	}
	if len(good) != 2 || good[0].Kind != PollTick || good[1].Kind != ReconcileEnd {
		t.Fatalf("good = %+v", good)
	}
	if good[0].Time.IsZero() {
		t.Fatal("an event without time gets the time it was read")
	}
	if len(bad) != 3 || bad[0] != "not json at all" || len(bad[2]) > 200 {
		t.Fatalf("bad = %q", bad)
	}
}

// FuzzDecode: no input crashes the decoder, every line is either an event
// or counted as malformed, and nothing is both.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"kind":"poll.tick"}` + "\n" + `garbage` + "\n"))
	f.Add([]byte(`{"time":"2026-11-22T09:41:03.211Z","source":"x","kind":"k","fields":{"a":[1,{"b":null}]}}`))
	f.Add([]byte("{\"kind\":\"\xff\"}\r\n\n\x00"))
	f.Add([]byte(`{"kind":"a","time":"not a time"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		lines := 0
		for _, l := range bytes.Split(in, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines++
			}
		}
		n := 0
		err := Decode(bytes.NewReader(in), func(e Event) {
			n++
			if e.Kind == "" {
				t.Fatal("event without kind")
			}
			_ = e.Line()
		}, func(string) { n++ })
		if err != nil {
			t.Fatal(err)
		}
		if n > lines {
			t.Fatalf("%d results for %d lines", n, lines)
		}
	})
}

// The proxy's api.watch_event carries only schema fields, and reads as a
// timeline line whether or not its frame could be read.
func TestAPIWatchEvent(t *testing.T) {
	tests := []struct{ typ, want string }{
		{"ADDED", "watch configmaps delivered ADDED"},
		{"", "watch configmaps delivered unreadable event"},
	}
	for _, tc := range tests {
		e := Event{Source: "proxy/clientgo/a", Kind: APIWatchEvent, Namespace: "ns", Object: "ConfigMap/a",
			Payload: WatchEvent{Resource: "configmaps", Type: tc.typ}}
		if err := CheckSchema(e); err != nil {
			t.Error(err)
		}
		if got := e.Summary(); got != tc.want {
			t.Errorf("Summary() = %q, want %q", got, tc.want)
		}
	}
}

// rlab.act carries only schema fields and says who acted, and how.
func TestAct(t *testing.T) {
	at := time.Date(2026, 11, 22, 9, 41, 3, 211e6, time.UTC)
	tests := []struct {
		name string
		act  Action
		want string
	}{
		{"command with a style", Action{Action: "partition_leader", Style: "clientgo", Via: ViaCommand},
			"09:41:03.211 rlab             rlab.act          rlab do: partition_leader (clientgo)"},
		{"autoplay without a style", Action{Action: "remove_shell_replica", Via: ViaPlay},
			"09:41:03.211 rlab             rlab.act          autoplay: remove_shell_replica"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Event{Time: at, Source: SourceRlab, Kind: Act, Payload: tt.act}
			if err := CheckSchema(e); err != nil {
				t.Fatal(err)
			}
			if got := e.Line(); got != tt.want {
				t.Errorf("Line() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestPredicates(t *testing.T) {
	req := func(verb, resource string, code int) Event {
		return Event{Kind: APIRequest, Payload: Request{Verb: verb, Resource: resource, Code: code}}
	}
	for _, tc := range []struct {
		name                              string
		e                                 Event
		write, housekeeping, lease, renew bool
		code                              int
	}{
		{name: "get", e: req("get", "deployments", 200), code: 200},
		{name: "create", e: req("create", "deployments", 201), write: true, code: 201},
		{name: "status patch", e: req("patch", "echoes/status", 200), write: true, code: 200},
		{name: "deletecollection", e: req("deletecollection", "pods", 200), write: true, code: 200},
		{name: "lease renewal", e: req("update", "leases", 200), write: true, housekeeping: true, lease: true, renew: true, code: 200},
		{name: "lease renewal refused", e: req("update", "leases", 409), write: true, housekeeping: true, lease: true, code: 409},
		{name: "lease read", e: req("get", "leases", 200), housekeeping: true, lease: true, code: 200},
		{name: "event", e: req("create", "events", 201), write: true, housekeeping: true, code: 201},
		{name: "event subresource", e: req("patch", "events/x", 200), write: true, housekeeping: true, code: 200},
		{name: "no code", e: req("watch", "echoes", 0)},
		{name: "kubectl is no request", e: Event{Kind: Kubectl, Payload: Command{Verb: "patch"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			if got := [4]bool{e.IsWrite(), e.IsHousekeeping(), e.IsLease(), e.IsLeaseRenewal()}; got != [4]bool{tc.write, tc.housekeeping, tc.lease, tc.renew} {
				t.Fatalf("write, housekeeping, lease, renewal = %v", got)
			}
			if e.Code() != tc.code {
				t.Fatalf("Code() = %d, want %d", e.Code(), tc.code)
			}
		})
	}
}
