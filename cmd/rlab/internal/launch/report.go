package launch

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/tui"
)

// Report is told how start-up goes; a nil field is not told. Print reports
// on a terminal, Show on the screen.
type Report struct {
	// Build receives a control-plane build's output, when one is needed. If
	// it has a Flush method, that is called once the build ends.
	Build io.Writer
	// Starting is told the state dir and backend just before the sandbox starts.
	Starting func(d state.Dir, b backend.Backend)
	// Phase is told each start-up phase as it ends, "control plane installed"
	// first if the binaries had to be fetched or built.
	Phase func(cluster.Phase)
	// Note is told what is worth saying: processes a previous run left.
	Note func(string)
	// Serving is told when the apiserver serves, the Echo CRD and the
	// Nodes are there, and rlab's engine is set up: the screen opens then.
	Serving func(sb *sandbox.Sandbox)
	// ClusterReady is told when the cluster is ready, as kwokctl's --wait
	// means it (the apiserver healthy, every component running), before
	// Start waits for the operators and the sample Echo (if it does).
	ClusterReady func(sb *sandbox.Sandbox)
	// Failed is told when the start-up that went on behind the screen
	// failed (a *StartError): the screen was open, the sandbox is of no
	// more use.
	Failed func(error)
}

// Print reports start-up as the headless commands do: on w, line by line.
func Print(w io.Writer) Report {
	return Report{
		Build: w,
		Starting: func(d state.Dir, b backend.Backend) {
			fmt.Fprintf(w, "starting sandbox (%s, state in %s)\n", b.Title(), d.Root)
		},
		Note: func(s string) { fmt.Fprintln(w, s) },
		Serving: func(sb *sandbox.Sandbox) {
			fmt.Fprintf(w, "apiserver serving in %.2fs\n", sb.Serving.Seconds())
		},
		ClusterReady: func(sb *sandbox.Sandbox) {
			fmt.Fprintf(w, "cluster ready in %.2fs on %s\n", sb.ClusterReady.Seconds(), Info(sb.Cluster()).Backend)
		},
	}
}

// Show reports start-up on the screen, through send (tea.Program.Send).
func Show(send func(tea.Msg)) Report {
	return Report{
		Build:  &lineWriter{send: func(s string) { send(tui.BuildLineMsg(s)) }},
		Phase:  func(ph cluster.Phase) { send(tui.PhaseMsg{Name: ph.Name, Took: ph.Took}) },
		Note:   func(s string) { send(tui.NoteMsg(s)) },
		Failed: func(err error) { send(tui.BehindFailedMsg{Err: err}) },
	}
}

// lineWriter sends each line written to it (split at \n or \r, so a
// redrawn progress line is sent each time); Flush sends a last, unfinished
// one. The screen shows a control-plane build this way.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	send func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexAny(w.buf, "\r\n")
		if i < 0 {
			break
		}
		if i > 0 {
			w.send(string(w.buf[:i]))
		}
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

// Flush sends what is left of an unfinished line.
func (w *lineWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.send(string(w.buf))
		w.buf = nil
	}
	return nil
}

// countWriter counts what is written through it to w (nil: discarded).
type countWriter struct {
	w io.Writer
	n int
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += len(p)
	if c.w == nil {
		return len(p), nil
	}
	return c.w.Write(p)
}
