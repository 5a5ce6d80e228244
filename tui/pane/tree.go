package pane

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/stats"
)

// Tree is the object tree: Echo (spec, status.ready) → Deployment
// (ready/desired) → ReplicaSets → Pods, then the objects garbage-collected in
// the last few seconds, flashing, with "collected by GC".
func Tree(d Data, st *stats.Style, w int, s *common.Styles) []string {
	var out []string
	add := func(l *common.Line) { out = append(out, l.Fit(w)) }
	var ev *world.EchoView
	var orphans []*world.DeploymentView
	if d.NS != nil {
		ev = d.NS.Echoes[d.Echo]
		orphans = d.NS.Orphans
	}
	l := &common.Line{}
	switch {
	case d.NS == nil:
		l.Add(s.Dim, "Echo/"+d.Echo+" …")
		add(l)
	case ev == nil:
		l.Add(s.Dim, "Echo/"+d.Echo+" not found")
		add(l)
	default:
		l.Add(s.Bold, "Echo/"+ev.Name).Plain(" ")
		ready := ev.Ready
		if ready == "" {
			ready = "-/" + strconv.Itoa(int(ev.Replicas))
		}
		if ready == fmt.Sprintf("%d/%d", ev.Replicas, ev.Replicas) {
			l.Add(s.OK, ready)
		} else {
			l.Add(s.Warn, ready)
		}
		l.Add(s.Dim, fmt.Sprintf(" ×%d %q", ev.Replicas, ev.Message))
		if ev.Deleting {
			l.Add(s.Warn, " deleting")
			if len(ev.Finalizers) > 0 { // what it waits for: someone must remove these
				l.Add(s.Dim, " · waits for "+strings.Join(ev.Finalizers, ","))
			}
		}
		add(l)
		if ev.Deployment != nil {
			out = append(out, deployment(d, ev.Deployment, "└ ", "  ", w, s)...)
		} else {
			add((&common.Line{}).Add(s.Dim, "└ ").Add(s.Warn, "no Deployment"))
		}
	}
	for _, o := range orphans {
		if o.Name != echo.DeploymentName(d.Echo) {
			continue
		}
		out = append(out, deployment(d, o, "", "", w, s)...)
	}
	gone := st.Collected(d.Now, FlashFor)
	// The newest few, flashing; a cascade of Pods is summed up.
	const shown = 3
	if n := len(gone); n > shown {
		add((&common.Line{}).Add(s.Err, fmt.Sprintf("✕ %d more collected by GC", n-shown)))
		gone = gone[n-shown:]
	}
	for _, c := range gone {
		l := &common.Line{}
		text := "✕ " + c.Object + " collected by GC"
		if int(d.Now.Sub(c.At)/FlashEvery)%2 == 0 {
			l.Add(s.Flash, text)
		} else {
			l.Add(s.Err, text)
		}
		add(l)
	}
	return out
}

func deployment(d Data, dv *world.DeploymentView, first, indent string, w int, s *common.Styles) []string {
	var out []string
	add := func(l *common.Line) { out = append(out, l.Fit(w)) }
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
		l.Add(s.Warn, " deleting")
	case dv.Owner == "":
		l.Add(s.Warn, " orphan")
	}
	add(l)
	// Old ReplicaSets scaled to zero stay (revision history): count them.
	var live []*world.ReplicaSetView
	old := 0
	for _, rs := range dv.ReplicaSets {
		if rs.Replicas == 0 && rs.ReadyReplicas == 0 && !rs.Deleting {
			old++
			continue
		}
		live = append(live, rs)
	}
	for _, rs := range live {
		l := &common.Line{}
		l.Add(s.Dim, indent+"├ ").Plain("ReplicaSet " + shortRS(rs.Name, dv.Name) + " ")
		l.Plain(fmt.Sprintf("%d/%d", rs.ReadyReplicas, rs.Replicas))
		if rs.Deleting {
			l.Add(s.Warn, " deleting")
		}
		add(l)
	}
	l = &common.Line{}
	l.Add(s.Dim, indent+"└ ").Plain("Pods ")
	var ready, pending, term int
	for _, p := range dv.Pods {
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
	if len(dv.Pods) == 0 {
		l.Add(s.Dim, "none")
	} else {
		var parts []string
		if ready > 0 {
			parts = append(parts, fmt.Sprintf("%d ready", ready))
		}
		if pending > 0 {
			parts = append(parts, fmt.Sprintf("%d starting", pending))
		}
		if term > 0 {
			parts = append(parts, fmt.Sprintf("%d terminating", term))
		}
		l.Add(s.Dim, " "+strings.Join(parts, ", "))
	}
	if old > 0 {
		l.Add(s.Dim, fmt.Sprintf(" · %d old RS", old))
	}
	add(l)
	return out
}

// shortRS is "…-7c9f5" for a ReplicaSet named after its Deployment.
func shortRS(rs, deploy string) string {
	if h, ok := strings.CutPrefix(rs, deploy+"-"); ok {
		return "…-" + h
	}
	return rs
}
