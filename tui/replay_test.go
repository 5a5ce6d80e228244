package tui_test

import (
	"bytes"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/tui"
	"github.com/kkloud/rlab/tui/internal/fixture"
	"github.com/kkloud/rlab/tui/replay"
)

// session.jsonl.gz was recorded with `rlab up --record` against the real
// sandbox: the sample Echo 2/2, `+` (3/3), `d` (drift repaired, GC of the old
// ReplicaSet and Pods), `2 k` (client-go's leader killed) and `e` "xin chao".
const session = "testdata/session.jsonl.gz"

func loadSession(t testing.TB) *replay.Recording {
	t.Helper()
	f, err := os.Open(session)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec, err := replay.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestReplayGolden renders the recorded session at fixed moments and sizes;
// refresh with `go test ./tui -run TestReplayGolden -update`.
func TestReplayGolden(t *testing.T) {
	rec := loadSession(t)
	tests := []struct {
		name string
		at   time.Duration
		w, h int
	}{
		{"120x40-scaled", 21 * time.Second, 120, 40},
		{"120x40-drift", 23500 * time.Millisecond, 120, 40},
		{"200x60-drift", 23500 * time.Millisecond, 200, 60},
		{"200x60-leader-killed", 33 * time.Second, 200, 60},
		{"120x40-end", 43 * time.Second, 120, 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := replay.New(rec, replay.Options{Paused: true})
			m.Inner.Update(tea.WindowSizeMsg{Width: tt.w, Height: tt.h})
			m.SeekTo(rec.Header.Start.Add(tt.at))
			out := ansi.Strip(m.View().Content)
			golden.RequireEqual(t, out+"\n")
		})
	}
}

// TestReplaySameScreenAsLive: the screen derives process states and API
// counts from the events, so a recording replayed shows the panes exactly
// as the live screen showed them: a frozen replica, a dead one, a removed
// second shell loop, and the proxies' counts, drops included.
func TestReplaySameScreenAsLive(t *testing.T) {
	at := fixture.At
	evs := append(fixture.Events(),
		trace.Event{Time: at(20 * time.Second), Source: supervisor.Source, Kind: trace.ProcessStart, Object: style.Shell.Source("b"),
			Payload: trace.Process{PID: 4300, Restarts: 0}},
		trace.Event{Time: at(30 * time.Second), Source: supervisor.Source, Kind: trace.ProcessExit, Object: style.Shell.Source("b"),
			Payload: trace.Process{PID: 4300, Code: trace.ExitCode(0), Removed: true}},
		trace.Event{Time: at(39 * time.Second), Source: supervisor.Source, Kind: trace.ProcessPause, Object: style.ClientGo.Source("b"),
			Payload: trace.Process{PID: 4126}},
		trace.Event{Time: at(39500 * time.Millisecond), Source: supervisor.Source, Kind: trace.ProcessExit, Object: style.Runtime.Source("a"),
			Payload: trace.Process{PID: 4129, Restarts: 0, Signal: "killed", BackoffMS: 500}},
		trace.Event{Time: at(40 * time.Second), Source: "proxy/" + style.ClientGo.Source("a"), Kind: trace.Dropped,
			Payload: trace.Loss{Count: 100}},
	)
	slices.SortStableFunc(evs, func(a, b trace.Event) int { return a.Time.Compare(b.Time) })
	now := at(40 * time.Second) // the last event: where a replay ends
	const w, h = 200, 60

	// Live: the events on the bus, drained by frames.
	src := fixture.NewSource(fixture.Snapshot())
	live := tui.New(tui.Options{Source: src, Now: func() time.Time { return now }, Start: fixture.T0, Echo: "hello"})
	live.Update(tea.WindowSizeMsg{Width: w, Height: h})
	for _, e := range evs {
		src.Bus.Publish(e)
	}
	for live.Update(tui.FrameMsg{}); live.Pending() > 0; live.Update(tui.FrameMsg{}) {
	}

	// Replayed: the same events and world from a recording.
	var buf bytes.Buffer
	r, err := replay.NewRecorder(&buf, replay.Header{Start: fixture.T0, Echo: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if err := r.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.World(at(10*time.Second), fixture.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	rec, err := replay.Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	m := replay.New(rec, replay.Options{Paused: true})
	m.Inner.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.SeekTo(now)

	panes := func(out string) string {
		lines := strings.Split(ansi.Strip(out), "\n")
		for i, l := range lines {
			if strings.Contains(l, "timeline ·") {
				return strings.Join(lines[1:i], "\n") // below the header
			}
		}
		t.Fatalf("no timeline on screen:\n%s", out)
		return ""
	}
	got, want := panes(m.Inner.Render()), panes(live.Render())
	if got != want {
		t.Errorf("replayed panes differ from the live ones:\n%s\nlive:\n%s", got, want)
	}
	for _, fact := range []string{
		"API 122 req",              // client-go: 22 requests seen, 100 dropped by its proxy
		"b frozen",                 // client-go's b, paused
		"a down (killed)",          // controller-runtime's a
		"(1 replica, no election)", // the second shell loop removed
		"replica a pid 4120 · restarts 0",
	} {
		if !strings.Contains(got, fact) {
			t.Errorf("replayed panes do not say %q:\n%s", fact, got)
		}
	}
}

// TestSessionTyped: the recording of 2026-11-22, written before events had
// typed payloads, decodes through the one decode into the payload each kind
// carries: every event on the schema, the counts per kind as recorded, and
// known events of the Go proxies and of bash (numbers written as JSON
// numbers by printf) read field by field. Written again, each event decodes
// to the same payload.
func TestSessionTyped(t *testing.T) {
	rec := loadSession(t)
	counts := map[trace.Kind]int{}
	var evs []trace.Event
	for _, r := range rec.Records {
		if r.Event == nil {
			continue
		}
		e := *r.Event
		evs = append(evs, e)
		counts[e.Kind]++
		if err := trace.CheckSchema(e); err != nil {
			t.Errorf("recorded event off the schema: %v", err)
		}
		if e.Payload == nil {
			t.Errorf("recorded %s without a payload", e.Kind)
		}
		var buf bytes.Buffer
		if err := trace.Encode(&buf, e); err != nil {
			t.Fatal(err)
		}
		back, err := trace.ParseLine(bytes.TrimSpace(buf.Bytes()))
		if err != nil || !reflect.DeepEqual(back.Payload, e.Payload) {
			t.Errorf("%s written again: %+v, %v; want %+v", e.Kind, back.Payload, err, e.Payload)
		}
	}
	wantCounts := map[trace.Kind]int{
		trace.APIRequest: 247, trace.DriftDetected: 3, trace.DriftRepaired: 3, trace.Converged: 9, trace.GCCollected: 12,
		trace.InformerAdd: 8, trace.InformerDelete: 2, trace.InformerUpdate: 78, trace.Kubectl: 33,
		trace.LeaderAcquired: 3, trace.LeaderLost: 2, trace.LeaderObserved: 9, trace.PollTick: 8,
		trace.ProcessExit: 1, trace.ProcessStart: 6, trace.QueueAdd: 88, trace.QueueDone: 74, trace.QueueGet: 74,
		trace.ReconcileEnd: 80, trace.ReconcileStart: 81,
	}
	if !reflect.DeepEqual(counts, wantCounts) {
		t.Errorf("events per kind = %v, want %v", counts, wantCounts)
	}

	first := func(source string, kind trace.Kind) trace.Event {
		for _, e := range evs {
			if e.Source == source && e.Kind == kind {
				return e
			}
		}
		t.Fatalf("no %s from %s", kind, source)
		return trace.Event{}
	}
	tests := []struct {
		name string
		got  func() (trace.Payload, bool)
		want trace.Payload
	}{
		{"the first request of client-go's a", func() (trace.Payload, bool) { return first("proxy/clientgo/a", trace.APIRequest).Request() },
			trace.Request{Verb: "get", Resource: "leases", Code: 404, LatencyMS: 8.664, UserAgent: "echo-clientgo/a"}},
		{"bash's first kubectl", func() (trace.Payload, bool) { return first("shell/a", trace.Kubectl).Command() },
			trace.Command{Verb: "get echoes", Code: 0, DurationMS: 270}},
		{"bash's first reconcile.end", func() (trace.Payload, bool) { return first("shell/a", trace.ReconcileEnd).Reconcile() },
			trace.Reconcile{ID: 1, Result: trace.ResultOK, DurationMS: 446, Changed: "created", Status: "0/2"}},
		{"the supervisor's first start", func() (trace.Payload, bool) { return first("supervisor", trace.ProcessStart).Process() },
			trace.Process{PID: 8481}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.got()
			if !ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("payload = %#v, %v; want %#v", got, ok, tt.want)
			}
		})
	}
}
