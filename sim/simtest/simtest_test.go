package simtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
)

func TestPoll(t *testing.T) {
	tests := []struct {
		name    string
		cond    func(n int) (bool, error)
		wantErr string
	}{
		{"true at once", func(int) (bool, error) { return true, nil }, ""},
		{"true on the third call", func(n int) (bool, error) { return n >= 3, nil }, ""},
		{"never", func(int) (bool, error) { return false, nil }, "not within 100ms"},
		{"never, says why", func(int) (bool, error) { return false, errors.New("2 of 3 ready") }, "last error: 2 of 3 ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			err := Poll(t.Context(), 100*time.Millisecond, func(context.Context) (bool, error) { n++; return tt.cond(n) })
			if tt.wantErr == "" && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want it to say %q", err, tt.wantErr)
			}
		})
	}
}

func TestRecorderFromBus(t *testing.T) {
	b := bus.New()
	var r EventLog
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go r.Run(ctx, b.Subscribe(16))
	b.Publish(trace.Event{Kind: trace.Log, Object: "x"})
	b.Publish(trace.Event{Kind: trace.GCCollected, Source: "world", Object: "Deployment/echo-hello", Payload: trace.GC{Owner: "Echo/hello"}})
	got := r.Wait(t, 5*time.Second, trace.GCCollected, "Deployment/echo-hello", func(e trace.Event) bool { return trace.As[trace.GC](e).Owner == "Echo/hello" })
	if got.Source != "world" {
		t.Fatalf("Wait returned %+v", got)
	}
	if n := r.Count(trace.Log, ""); n != 1 {
		t.Fatalf("Count(log) = %d, want 1", n)
	}
	if n := r.Count(trace.GCCollected, "world"); n != 1 {
		t.Fatalf("Count(gc, world) = %d, want 1", n)
	}
	if n := len(r.All()); n != 2 {
		t.Fatalf("All: %d events, want 2", n)
	}
}

// errorsTB counts the errors a helper reports instead of failing the test.
type errorsTB struct {
	testing.TB
	errs []string
}

func (e *errorsTB) Helper() {}

func (e *errorsTB) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

func TestCheckSchema(t *testing.T) {
	var r EventLog
	r.Publish(trace.Event{Kind: trace.GCCollected, Source: "world", Payload: trace.GC{Owner: "Echo/hello"}})
	// A key misspelt by hand (bash) comes through the decode.
	typo, err := trace.ParseLine([]byte(`{"kind":"gc.collected","source":"world","fields":{"ownr":"Echo/hello"}}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Publish(typo)
	r.Publish(trace.Event{Kind: "no.such.kind", Source: "proxy/clientgo/a"})
	tb := &errorsTB{TB: t}
	r.CheckSchema(tb)
	if len(tb.errs) != 2 || !strings.Contains(tb.errs[0], `"ownr"`) || !strings.Contains(tb.errs[1], "no.such.kind") {
		t.Fatalf("CheckSchema reported %q, want the misspelt field and the unknown kind", tb.errs)
	}
}
