package launch

import (
	"context"
	"sync/atomic"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui"
	"github.com/kkloud/rlab/tui/logfile"
)

// The screen's log view reads the operators' logs through the Source.
var _ tui.Logs = (*sandboxSource)(nil)

// sandboxSource is the screen's view of a running sandbox.
type sandboxSource struct {
	sb  *sandbox.Sandbox
	sub *bus.Sub
	ver atomic.Uint64
}

// newSandboxSource counts the world's changes until ctx ends or the world
// stops: World.Changed has room for one consumer, and the screen and the
// recorder both want to know.
func newSandboxSource(ctx context.Context, sb *sandbox.Sandbox, sub *bus.Sub) *sandboxSource {
	s := &sandboxSource{sb: sb, sub: sub}
	s.ver.Store(1)
	if changed, done := sb.World().Changes(); changed != nil {
		go func() {
			for {
				select {
				case <-changed:
					s.ver.Add(1)
				case <-done:
					return
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return s
}

func (s *sandboxSource) Sub() *bus.Sub   { return s.sub }
func (s *sandboxSource) Version() uint64 { return s.ver.Load() }

func (s *sandboxSource) Snapshot() world.Snapshot { return s.sb.World().Snapshot() }

// ReadLog is tui.Logs: the replica's log file, where the sandbox put it.
func (s *sandboxSource) ReadLog(st style.Style, replica string, from int64, limit int) (tui.LogChunk, error) {
	return logfile.ReadFile(s.sb.Operators().LogFile(st, replica), from, limit)
}
