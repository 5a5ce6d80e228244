package tui_test

import (
	"bytes"
	"os"
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
