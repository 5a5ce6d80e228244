package tui_test

import (
	"os"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

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
