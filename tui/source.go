// Package tui is rlab's screen: three live operator panes side by side, a
// timeline, and the actions of DESIGN §4. The model reads the engine through
// Source and acts through Actions, so tests and replays drive it with no
// cluster.
package tui

import (
	"context"

	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/sim/trace"
	"github.com/kkloud/rlab/sim/world"
)

// Source is what the screen reads.
type Source interface {
	// Sub is the subscription the screen drains once per frame.
	Sub() *trace.Sub
	// Snapshot is the world model now.
	Snapshot() world.Snapshot
	// Version changes whenever Snapshot would return something new; the
	// screen takes a snapshot only then.
	Version() uint64
	// Statuses are the replicas' processes; nil if not known (a replay).
	Statuses() []supervisor.Status
	// APICounts are a replica's ("clientgo/a") requests by "verb resource",
	// counted by its proxy; ok is false if not known (a replay).
	APICounts(replica string) (counts map[string]int, ok bool)
}

// Actions are what the keys do: the Sandbox's action methods.
type Actions interface {
	SetReplicas(ctx context.Context, name string, n int) error
	SetMessage(ctx context.Context, name, msg string) error
	DeleteDeployment(ctx context.Context, style, name string) error
	ScaleDeployment(ctx context.Context, style, name string, n int) error
	DeleteEcho(ctx context.Context, name string) error
	CreateEcho(ctx context.Context, name, msg string, n int) error
	KillLeader(ctx context.Context, style string) (string, error)
	StopLeader(ctx context.Context, style string) (string, error)
}

// Info is what the header says about the sandbox.
type Info struct {
	Backend, Version string // "envtest", "v1.36.3"
}
