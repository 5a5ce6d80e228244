package optest

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/kkloud/rlab/operators/echo/instrument"
	"github.com/kkloud/rlab/operators/trace"
)

// Log is a logger that writes nowhere.
func Log() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Traced runs f with a tracer over namespace "ns" and returns what it
// emitted, each event checked against the trace schema.
func Traced(t *testing.T, f func(tr *instrument.Tracer)) []trace.Event {
	t.Helper()
	var out strings.Builder // read only after em.Close: the emitter has written all
	em := instrument.NewEmitter(&out, "clientgo/a")
	f(instrument.NewTracer(em, "ns", Log()))
	em.Close()
	var evs []trace.Event
	if err := trace.Decode(strings.NewReader(out.String()), func(e trace.Event) {
		if err := trace.CheckSchema(e); err != nil {
			t.Errorf("tracer event off the schema: %v", err)
		}
		evs = append(evs, e)
	}, func(l string) { t.Fatalf("malformed %q", l) }); err != nil {
		t.Fatal(err)
	}
	return evs
}

// Ended is the reconcile.end among evs, failing t if the last event is not
// one about Echo/hello.
func Ended(t *testing.T, evs []trace.Event) trace.Event {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	end := evs[len(evs)-1]
	if end.Kind != trace.ReconcileEnd || end.Object != "Echo/hello" {
		t.Fatalf("last event %+v, want reconcile.end about Echo/hello", end)
	}
	return end
}

// DiscardTracer traces nowhere: for tests of the operator, not its trace.
func DiscardTracer(ns string) *instrument.Tracer {
	return instrument.NewTracer(instrument.NewEmitter(nil, "test"), ns, Log())
}

// Wire is the value e carries under key as it is written on the wire ("" if
// absent), as text: the tests of what an operator writes (bash by hand)
// check its keys, not the payload Go reads them into.
func Wire(e trace.Event, key string) string {
	var b strings.Builder
	if err := trace.Encode(&b, e); err != nil {
		return ""
	}
	var line struct {
		Fields map[string]any `json:"fields"`
	}
	if json.Unmarshal([]byte(b.String()), &line) != nil || line.Fields[key] == nil {
		return ""
	}
	return fmt.Sprint(line.Fields[key])
}
