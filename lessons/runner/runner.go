// Package runner runs the course's lessons on a sandbox: the guide in a
// terminal, the session the screen shows, rlab lesson verify (autoplay and
// by hand), and the student's progress and reports.
package runner

import (
	"github.com/kkloud/rlab/lessons/actions"
	"github.com/kkloud/rlab/sim/sandbox"
)

// Player is an actions.Player with what the runners add: the sandbox they
// name, and whom to tell where the student is.
type Player struct {
	*actions.Player
	sb *sandbox.Sandbox
	// Report, if set, is told where the student is as it changes.
	Report Report
}

// NewPlayer subscribes to the sandbox's trace. Close it when done.
func NewPlayer(sb *sandbox.Sandbox) *Player {
	return &Player{Player: actions.NewPlayer(sb), sb: sb}
}
