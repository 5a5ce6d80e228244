package cluster

import (
	"time"

	"github.com/kkloud/rlab/sim/proc"
)

// Mark is one moment of a backend's start-up: which process (or rlab) did
// what, and when after Start began.
type Mark struct {
	At   time.Duration `json:"at"`
	Who  string        `json:"who"`
	What string        `json:"what"`
}

// ProcessCPU is the CPU time one process had used when start-up ended: the
// floor a start cannot go below is the apiserver's own.
type ProcessCPU struct {
	Name string        `json:"name"`
	PID  int           `json:"pid"`
	CPU  time.Duration `json:"cpu"`
}

// Timeline is a start-up's marks, in order, and what each process cost.
type Timeline struct {
	Began time.Time    `json:"began"` // Start was called
	Marks []Mark       `json:"marks"`
	CPU   []ProcessCPU `json:"cpu,omitempty"`
}

// Timed is a backend that records a start-up timeline (envtest: it starts
// the processes itself).
type Timed interface{ Timeline() Timeline }

var _ Timed = (*Envtest)(nil)

// begin starts the timeline's clock.
func (p *phases) begin() {
	p.mu.Lock()
	p.t0 = time.Now()
	p.mu.Unlock()
}

// mark records that who did what, now.
func (p *phases) mark(who, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.t0.IsZero() {
		return
	}
	p.marks = append(p.marks, Mark{At: time.Since(p.t0), Who: who, What: what})
}

// Timeline implements Timed.
func (p *phases) Timeline() Timeline {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Timeline{Began: p.t0, Marks: append([]Mark(nil), p.marks...), CPU: append([]ProcessCPU(nil), p.cpu...)}
}

// noteCPU records the CPU time each of children has used so far.
func (p *phases) noteCPU(children []*proc.Child) {
	var out []ProcessCPU
	for _, c := range children {
		d, err := proc.CPUTime(c.PID())
		if err != nil {
			continue // not measured on this platform, or gone
		}
		out = append(out, ProcessCPU{Name: c.Name, PID: c.PID(), CPU: d})
	}
	p.mu.Lock()
	p.cpu = out
	p.mu.Unlock()
}
