package pane

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/stats"
)

// Tree is the object tree: Echo (spec, status.ready) → Deployment
// (ready/desired) → ReplicaSets → Pods, then the objects garbage-collected in
// the last few seconds, flashing, with "collected by GC".
func Tree(d Data, st *stats.Operator, w int, s *common.Theme) []string {
	ws := d.Words
	var out []string
	var ev *world.EchoView
	var orphans []*world.DeploymentView
	if d.NS != nil {
		ev = d.NS.Echoes[d.Echo]
		orphans = d.NS.Orphans
	}
	switch {
	case d.NS == nil:
		out = append(out, (&common.Line{}).Add(s.Dim, "Echo/"+d.Echo+" …").Fit(w))
	case ev == nil:
		out = append(out, (&common.Line{}).Add(s.Dim, ws.F("%s not found", "Echo/"+d.Echo)).Fit(w))
	default:
		out = append(out, echoLine(ev, st.Converged[d.Echo], s, ws).Fit(w))
		if ev.Deployment != nil {
			out = append(out, deployment(d, ev.Deployment, "└ ", "  ", w, s)...)
		} else if c := st.Converged[d.Echo]; c == nil || c.CreatedAt.IsZero() {
			// Not converged yet: its operator has not created it so far.
			out = append(out, (&common.Line{}).Add(s.Dim, "└ "+ws.T("no Deployment yet")).Fit(w))
		} else {
			out = append(out, (&common.Line{}).Add(s.Dim, "└ ").Add(s.Warn, ws.T("no Deployment")).Fit(w))
		}
	}
	for _, o := range orphans {
		if o.Name == echo.DeploymentName(d.Echo) {
			out = append(out, deployment(d, o, "", "", w, s)...)
		}
	}
	return append(out, collected(d, st, w, s)...)
}

// echoLine is the Echo: its readiness, how it converges, its spec, and
// what holds its deletion.
func echoLine(ev *world.EchoView, c *stats.Convergence, s *common.Theme, ws lessonview.Words) *common.Line {
	l := &common.Line{}
	l.Add(s.Bold, "Echo/"+ev.Name).Plain(" ")
	ready := ev.Ready
	if ready == "" {
		ready = "-/" + strconv.Itoa(int(ev.Replicas))
	}
	if readyAll(ev) {
		l.Add(s.OK, ready)
	} else {
		l.Add(s.Warn, ready)
	}
	// Written for an older spec: what it says may no longer be true. An
	// operator that writes no observedGeneration (0) says nothing of it.
	if ev.ObservedGeneration > 0 && ev.ObservedGeneration < ev.Generation {
		l.Add(s.Warn, ws.F(" stale: status of gen %d, spec gen %d", ev.ObservedGeneration, ev.Generation))
	}
	converging(l, ev, c, s, ws)
	l.Add(s.Dim, fmt.Sprintf(" ×%d %q", ev.Replicas, ev.Message))
	if ev.Deleting {
		l.Add(s.Warn, " "+ws.T("deleting"))
		if len(ev.Finalizers) > 0 { // what it waits for: someone must remove these
			l.Add(s.Dim, ws.F(" · waits for %s", strings.Join(ev.Finalizers, ",")))
		}
	}
	return l
}

// converging says how the Echo converges, from what the world shows and
// reported (c, nil if nothing): creating (no Deployment yet), waiting for
// pods, waiting for the status, then "converged in" the time from its
// creation, which stays so that the styles can be compared.
func converging(l *common.Line, ev *world.EchoView, c *stats.Convergence, s *common.Theme, ws lessonview.Words) {
	done := c != nil && !c.CreatedAt.IsZero()
	dv := ev.Deployment
	switch {
	case ev.Deleting:
		return // said after the spec, with what holds it
	case dv == nil && !done:
		l.Add(s.Accent, " "+ws.T("creating"))
	case dv == nil:
		l.Add(s.Warn, " "+ws.T("no Deployment"))
	case dv.ReadyReplicas < ev.Replicas || dv.Replicas != ev.Replicas:
		l.Add(s.Accent, ws.F(" waiting for pods %d/%d", dv.ReadyReplicas, ev.Replicas))
	case !readyAll(ev):
		l.Add(s.Accent, ws.T(" pods ready")).Add(s.Dim, ws.T(", status not written yet"))
	case done:
		l.Add(s.OK, ws.T(" converged in ")).Add(s.Bold, took(c.CreatedMS))
		if !c.EditAt.IsZero() {
			l.Add(s.Dim, ws.T(" · edit ")+took(c.EditMS))
		}
		return
	default:
		return // ready before the screen saw it converge (a replay begun late)
	}
	if done {
		l.Add(s.Dim, ws.T(" · created in ")+took(c.CreatedMS))
	}
}

// took is a convergence time, to the hundredth of a second, so that the
// styles compare: "850ms", "1.23s".
func took(ms float64) string {
	if ms < 1000 {
		return fmt.Sprintf("%.0fms", ms)
	}
	return fmt.Sprintf("%.2fs", ms/1000)
}

// collected are the objects garbage-collected lately: the newest few,
// flashing; a cascade of Pods is summed up.
func collected(d Data, st *stats.Operator, w int, s *common.Theme) []string {
	ws := d.Words
	var out []string
	gone := st.Collected(d.Now, FlashFor)
	const shown = 3
	if n := len(gone); n > shown {
		out = append(out, (&common.Line{}).Add(s.Err, ws.F("✕ %d more collected by GC", n-shown)).Fit(w))
		gone = gone[n-shown:]
	}
	for _, c := range gone {
		p := s.Err
		if int(d.Now.Sub(c.At)/FlashEvery)%2 == 0 {
			p = s.Flash
		}
		out = append(out, (&common.Line{}).Add(p, ws.F("✕ %s collected by GC", c.Object)).Fit(w))
	}
	return out
}

// deployment is a Deployment, its live ReplicaSets and its Pods.
func deployment(d Data, dv *world.DeploymentView, first, indent string, w int, s *common.Theme) []string {
	ws := d.Words
	l := &common.Line{}
	l.Add(s.Dim, first).Plain("Deployment " + dv.Name + " ")
	rd := fmt.Sprintf("%d/%d", dv.ReadyReplicas, dv.Replicas)
	if dv.ReadyReplicas == dv.Replicas {
		l.Add(s.OK, rd)
	} else {
		l.Add(s.Warn, rd)
	}
	switch {
	case dv.Deleting:
		l.Add(s.Warn, " "+ws.T("deleting"))
	case dv.Owner == "":
		l.Add(s.Warn, " "+ws.T("orphan"))
	}
	out := []string{l.Fit(w)}
	// Old ReplicaSets scaled to zero stay (revision history): count them.
	// A Deployment scaled to zero has every ReplicaSet at 0/0, its current
	// one too, which cannot be told from the old: all are listed.
	old := 0
	for _, rs := range dv.ReplicaSets {
		if rs.Replicas == 0 && rs.ReadyReplicas == 0 && !rs.Deleting && dv.Replicas > 0 {
			old++
			continue
		}
		l := &common.Line{}
		l.Add(s.Dim, indent+"├ ").Plain("ReplicaSet " + shortRS(rs.Name, dv.Name) + " ")
		l.Plain(fmt.Sprintf("%d/%d", rs.ReadyReplicas, rs.Replicas))
		if rs.Deleting {
			l.Add(s.Warn, " "+ws.T("deleting"))
		}
		out = append(out, l.Fit(w))
	}
	l = pods(d, dv.Pods, indent, s)
	if old > 0 {
		l.Add(s.Dim, ws.F(" · %d old RS", old))
	}
	return append(out, l.Fit(w))
}

// pods is one mark per Pod (ready, starting, new, terminating), counted.
func pods(d Data, ps []*world.PodView, indent string, s *common.Theme) *common.Line {
	ws := d.Words
	l := &common.Line{}
	l.Add(s.Dim, indent+"└ ").Plain("Pods ")
	if len(ps) == 0 {
		return l.Add(s.Dim, ws.T("none"))
	}
	var ready, pending, term int
	for _, p := range ps {
		switch {
		case p.Deleting:
			term++
			l.Add(s.Dim, "○")
		case d.Fresh != nil && d.Fresh(p.Name):
			if p.Ready {
				ready++
			} else {
				pending++
			}
			l.Add(s.Fresh, "◉")
		case p.Ready:
			ready++
			l.Add(s.OK, "●")
		default:
			pending++
			l.Add(s.Warn, "◌")
		}
	}
	var parts []string
	for _, c := range []struct {
		n      int
		format string
	}{{ready, "%d ready"}, {pending, "%d starting"}, {term, "%d terminating"}} {
		if c.n > 0 {
			parts = append(parts, ws.F(c.format, c.n))
		}
	}
	return l.Add(s.Dim, " "+strings.Join(parts, ", "))
}

// shortRS is "…-7c9f5" for a ReplicaSet named after its Deployment.
func shortRS(rs, deploy string) string {
	if h, ok := strings.CutPrefix(rs, deploy+"-"); ok {
		return "…-" + h
	}
	return rs
}
