package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/internal/fixture"
)

func record(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	r, err := NewRecorder(&buf, Header{Backend: "envtest", Version: "v1.36.3", Start: fixture.T0, Echo: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range fixture.Events() {
		if err := r.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.World(fixture.At(10*time.Second), fixture.Snapshot()); err != nil {
		t.Fatal(err)
	}
	w := fixture.Snapshot()
	w.Namespaces[style.Shell.Namespace()] = fixture.Namespace(style.Shell, 3, 3, "")
	_ = r.World(fixture.At(30*time.Second), w)
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReplayRoundTrip(t *testing.T) {
	data := record(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	for name, in := range map[string][]byte{"plain": data, "gzip": gz.Bytes()} {
		t.Run(name, func(t *testing.T) {
			rec, err := Load(bytes.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			if rec.Header.Backend != "envtest" || rec.Header.Echo != "hello" || !rec.Header.Start.Equal(fixture.T0) {
				t.Fatalf("header = %+v", rec.Header)
			}
			if got, want := len(rec.Records), len(fixture.Events())+2; got != want {
				t.Fatalf("%d records, want %d", got, want)
			}
			for i := 1; i < len(rec.Records); i++ {
				if rec.Records[i].Time.Before(rec.Records[i-1].Time) {
					t.Fatalf("record %d out of order", i)
				}
			}
		})
	}
}

func TestReplayPlayer(t *testing.T) {
	rec, err := Load(bytes.NewReader(record(t)))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlayback(rec)
	ready := func() string {
		ns := p.Snapshot().Namespaces[style.Shell.Namespace()]
		if ns == nil {
			return ""
		}
		return ns.Echoes["hello"].Ready
	}
	tests := []struct {
		name   string
		do     func()
		now    time.Duration
		ready  string
		events int // drained after the step
	}{
		{"start", func() {}, 0, "", 1},
		{"one second at 2x", func() { p.SetSpeed(2); p.Advance(time.Second) }, 2 * time.Second, "", -1},
		{"paused stays", func() { p.SetPaused(true); p.Advance(time.Hour) }, 2 * time.Second, "", 0},
		{"to 12s", func() { p.SetPaused(false); p.Advance(5 * time.Second) }, 12 * time.Second, "2/2", -1},
		{"past the end stops at the end", func() { p.Advance(time.Hour) }, 39 * time.Second, "3/3", -1},
		{"seek back", func() { p.Seek(fixture.At(11 * time.Second)) }, 11 * time.Second, "2/2", 0},
	}
	for _, tt := range tests {
		tt.do()
		if got := p.Now().Sub(fixture.T0); got != tt.now {
			t.Errorf("%s: clock at %v, want %v", tt.name, got, tt.now)
		}
		if got := ready(); got != tt.ready {
			t.Errorf("%s: ready %q, want %q", tt.name, got, tt.ready)
		}
		evs, _ := p.Sub().Drain()
		if tt.events >= 0 && len(evs) != tt.events {
			t.Errorf("%s: %d events due, want %d", tt.name, len(evs), tt.events)
		}
	}
	if !p.Ended() == (p.pos >= len(rec.Records)) {
		t.Error("Ended wrong")
	}
}

func TestReplayLoadErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "empty recording"},
		{"garbage", "hello\nworld\n", "not an rlab recording: 2 unreadable lines"},
		{"bad world", `{"time":"2026-01-01T00:00:00Z","world":{"Namespaces":7}}` + "\n", "recorded world"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	// `rlab run --output json` plays too: events only.
	var buf bytes.Buffer
	for _, e := range fixture.Events()[:3] {
		trace.Encode(&buf, e)
	}
	rec, err := Load(&buf)
	if err != nil || len(rec.Records) != 3 || !rec.Header.Start.Equal(fixture.T0) {
		t.Fatalf("plain trace: %v, %+v", err, rec)
	}
}

// TestReplayRecorderRun records a live bus and world: every event, and the
// world only when it changed, at most every MinSnapshotEvery.
func TestReplayRecorderRun(t *testing.T) {
	b := bus.New()
	sub := b.Subscribe(1024)
	var ver uint64 = 1
	var versions = make(chan uint64, 1)
	versions <- ver
	version := func() uint64 {
		v := <-versions
		versions <- v
		return v
	}
	var buf bytes.Buffer
	r, _ := NewRecorder(&buf, Header{Start: fixture.T0})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	var snaps atomic.Int32 // world snapshots the recorder took
	snapshot := func() world.Snapshot { snaps.Add(1); return fixture.Snapshot() }
	waitSnaps := func(n int32) {
		t.Helper()
		simtest.Eventually(t, 10*time.Second, fmt.Sprintf("recorder took %d world snapshots", n),
			simtest.True(func() bool { return snaps.Load() >= n }))
	}
	go func() {
		done <- r.Run(ctx, Live{Sub: sub, Snapshot: snapshot, Version: version})
	}()
	for _, e := range fixture.Events()[:20] {
		b.Publish(e)
	}
	waitSnaps(1) // the first world
	<-versions
	versions <- 2 // one change
	waitSnaps(2)  // recorded on the next tick
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rec, err := Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var evs, worlds int
	for _, x := range rec.Records {
		if x.Event != nil {
			evs++
		}
		if x.World != nil {
			worlds++
		}
	}
	if evs != 20 || worlds != 2 {
		t.Fatalf("recorded %d events and %d worlds, want 20 and 2", evs, worlds)
	}
}
