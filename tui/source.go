// Package tui is rlab's screen: three live operator panes side by side, a
// timeline, and the actions of DESIGN §4. The model reads the engine through
// Source and acts through Actions, so tests and replays drive it with no
// cluster.
package tui

import (
	"context"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/logfile"
)

// Source is what the screen reads: one stream of events and the world
// model. Everything on screen (process states and API counts included) is
// derived from these two, so a replay shows what the live screen showed.
type Source interface {
	// Sub is the subscription the screen drains once per frame.
	Sub() *bus.Sub
	// Snapshot is the world model now.
	Snapshot() world.Snapshot
	// Version changes whenever Snapshot would return something new; the
	// screen takes a snapshot only then.
	Version() uint64
}

// Actions are what the keys do: the Sandbox's action methods.
type Actions interface {
	SetReplicas(ctx context.Context, name string, n int) error
	SetMessage(ctx context.Context, name, msg string) error
	// A "" style is every style, at the same instant.
	DeleteDeployment(ctx context.Context, st style.Style, name string) error
	ScaleDeployment(ctx context.Context, st style.Style, name string, n int) error
	DeleteEcho(ctx context.Context, name string) error
	CreateEcho(ctx context.Context, name, msg string, n int) error
	KillLeader(ctx context.Context, st style.Style) (string, error)
	StopLeader(ctx context.Context, st style.Style) (string, error)
	// ApplyFault turns a fault on at the style's replicas' proxies, or
	// off, as rlab do fault takes it ("stale:2s", "off"), and says what
	// it did; a fault it cannot read is an error that says why.
	ApplyFault(ctx context.Context, st style.Style, fault string) (string, error)
}

// Info is what the header says about the sandbox.
type Info struct {
	Backend, Version string // "envtest", "v1.36.3"
}

// Session is a lesson followed on the screen (`rlab lesson start N`): the
// lesson panel shows its State and the lesson keys drive it. Every method
// returns at once; what they start shows up in State.
type Session interface {
	// State is the lesson as it stands now; cheap, called once per frame.
	State() lessonview.State
	// Next goes to the next step without waiting for the check.
	Next()
	// Back goes to the previous step.
	Back()
	// Play performs this step's action for the student (autoplay).
	Play()
	// Key performs this step's action because the student pressed the key
	// the step names (lessonview.State.Key), on every style the step names; false
	// if the step has nothing for a key to do.
	Key() bool
	// Predict answers the step's question (lessonview.State.Predict) with choice,
	// from 1, before the student acts; an error says why not (a number out
	// of range, a step already played or passed).
	Predict(choice int) error
	// Open switches to lesson n, at the step the student got to before.
	Open(n int) error
	// Lessons lists the course, with the student's progress.
	Lessons() []lessonview.Entry
}

// Logs is what the log view reads: the log file of one operator replica
// (a built-in's human log; everything a student's operator prints). A
// Source that has logs implements it (the live sandbox's); a replay has
// none, and the log key says so.
type Logs interface {
	// ReadLog reads replica's log from byte offset from, at most max
	// bytes; from < 0 reads its last max bytes. A log shorter than from
	// (begun anew) is read from its start. A replica that has written
	// nothing yet may have no log: an error wrapping fs.ErrNotExist.
	ReadLog(st style.Style, replica string, from int64, max int) (LogChunk, error)
}

// LogChunk is a piece of a log: Data, the bytes from offset From up to
// Next, where the next read goes on.
type LogChunk = logfile.Chunk
