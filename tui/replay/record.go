// Package replay records what the screen shows (every trace event, and the
// world model whenever it changes) as JSON lines, and plays a recording back
// through the same screen with no cluster: for slides, classrooms without
// the control-plane build, and golden tests.
//
// A recording is a header line, then trace events exactly as `rlab run
// --output json` writes them, interleaved with world lines:
//
//	{"rlab_recording":1,"backend":"envtest","version":"v1.36.3","start":"…","styles":[…],"echo":"hello"}
//	{"time":"…","source":"clientgo/a","kind":"reconcile.start",…}
//	{"time":"…","world":{"Namespaces":{…}}}
//
// so a plain `rlab run --output json` file plays too (without the tree).
package replay

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/world"
)

// Format is the recording format version.
const Format = 1

// MinSnapshotEvery bounds how often the world is recorded (10/s at most).
const MinSnapshotEvery = 100 * time.Millisecond

// Header is the first line of a recording.
type Header struct {
	Recording int           `json:"rlab_recording"`
	Backend   string        `json:"backend,omitempty"`
	Version   string        `json:"version,omitempty"`
	Start     time.Time     `json:"start"`
	Styles    []style.Style `json:"styles,omitempty"`
	Echo      string        `json:"echo,omitempty"`
}

// worldLine is one recorded world model.
type worldLine struct {
	Time  time.Time       `json:"time"`
	World *world.Snapshot `json:"world"`
}

// Recorder writes a recording. Its methods are safe for one goroutine.
type Recorder struct {
	w   *bufio.Writer
	err error
}

// NewRecorder writes the header to w.
func NewRecorder(w io.Writer, h Header) (*Recorder, error) {
	h.Recording = Format
	r := &Recorder{w: bufio.NewWriterSize(w, 64<<10)}
	r.line(h)
	return r, r.err
}

func (r *Recorder) line(v any) {
	if r.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		r.err = fmt.Errorf("record: %w", err)
		return
	}
	b = append(b, '\n')
	if _, err := r.w.Write(b); err != nil {
		r.err = fmt.Errorf("record: %w", err)
	}
}

// Event records one trace event.
func (r *Recorder) Event(e trace.Event) error {
	if r.err == nil {
		if err := trace.Encode(r.w, e); err != nil {
			r.err = fmt.Errorf("record: %w", err)
		}
	}
	return r.err
}

// World records the world model as of t.
func (r *Recorder) World(t time.Time, s world.Snapshot) error {
	r.line(worldLine{Time: t, World: &s})
	return r.err
}

// Flush writes what is buffered.
func (r *Recorder) Flush() error {
	if r.err == nil {
		if err := r.w.Flush(); err != nil {
			r.err = fmt.Errorf("record: %w", err)
		}
	}
	return r.err
}

// Live is what Run records from: a subscription and the world.
type Live struct {
	Sub      *bus.Sub
	Snapshot func() world.Snapshot
	Version  func() uint64
}

// Run records every event of src.Sub, and the world each time its version
// changes (at most every MinSnapshotEvery), until ctx ends; then it records
// what is pending and the final world, and flushes.
func (r *Recorder) Run(ctx context.Context, src Live) error {
	tick := time.NewTicker(MinSnapshotEvery)
	defer tick.Stop()
	var ver uint64
	first := true
	// mu keeps the collector's events and the world models of this loop
	// from writing at once.
	var mu sync.Mutex
	c := src.Sub.Collect(func(evs []trace.Event, dropped int) {
		mu.Lock()
		defer mu.Unlock()
		if dropped > 0 {
			_ = r.Event(trace.Event{Time: time.Now(), Source: trace.SourceRlab, Kind: trace.Dropped,
				Payload: trace.Loss{Count: int(dropped)}})
		}
		for _, e := range evs {
			_ = r.Event(e)
		}
	})
	defer c.Close()
	snapAndFlush := func() error {
		mu.Lock()
		defer mu.Unlock()
		if src.Snapshot != nil {
			if v := src.Version(); v != ver || first {
				ver, first = v, false
				_ = r.World(time.Now(), src.Snapshot())
			}
		}
		return r.Flush()
	}
	for {
		select {
		case <-ctx.Done():
			c.Close() // what is pending is recorded before the final world
			return snapAndFlush()
		case <-tick.C:
			if err := snapAndFlush(); err != nil {
				return err
			}
		}
	}
}

// Recording is a loaded recording, its records sorted by time.
type Recording struct {
	Header  Header
	Records []Record
}

// Record is one event or one world model.
type Record struct {
	Time  time.Time
	Event *trace.Event
	World *world.Snapshot
}

// MaxLine is the longest line Load reads (a large world model).
const MaxLine = 16 << 20

// Load reads a recording (or a plain JSON-lines trace, which plays without
// the object tree).
func Load(r io.Reader) (*Recording, error) {
	// A recording may be gzipped (FILE.gz): look at the magic number.
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("read recording: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	rec := &Recording{}
	var bad int
	var firstBad string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var probe struct {
			Recording int             `json:"rlab_recording"`
			Time      time.Time       `json:"time"`
			Kind      string          `json:"kind"`
			World     json.RawMessage `json:"world"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			bad++
			if firstBad == "" {
				firstBad = string(line)
			}
			continue
		}
		switch {
		case probe.Recording > 0:
			if err := json.Unmarshal(line, &rec.Header); err != nil {
				return nil, fmt.Errorf("recording header: %w", err)
			}
		case probe.World != nil:
			var s world.Snapshot
			if err := json.Unmarshal(probe.World, &s); err != nil {
				return nil, fmt.Errorf("recorded world at %s: %w", probe.Time.Format(time.RFC3339Nano), err)
			}
			rec.Records = append(rec.Records, Record{Time: probe.Time, World: &s})
		case probe.Kind != "":
			e, err := trace.ParseLine(line)
			if err != nil {
				bad++
				continue
			}
			rec.Records = append(rec.Records, Record{Time: e.Time, Event: &e})
		default:
			bad++
			if firstBad == "" {
				firstBad = string(line)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read recording: %w", err)
	}
	if len(rec.Records) == 0 {
		if bad > 0 {
			return nil, fmt.Errorf("not an rlab recording: %d unreadable lines, the first: %.80q", bad, firstBad)
		}
		return nil, errors.New("empty recording")
	}
	// Sources stamp their own clocks, so lines are written a little out of
	// order; play them in time order (stable: equal times keep file order).
	sort.SliceStable(rec.Records, func(i, j int) bool { return rec.Records[i].Time.Before(rec.Records[j].Time) })
	if rec.Header.Start.IsZero() {
		rec.Header.Start = rec.Records[0].Time
	}
	return rec, nil
}

// End is the time of the last record.
func (r *Recording) End() time.Time { return r.Records[len(r.Records)-1].Time }
