package pane

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/stats"
)

// Resources listed by verb in a student's operator's pane: two by default,
// more when the verbs are asked for (v, or a full-width pane).
const (
	customResources     = 2
	customResourcesMore = 6
)

// customBody is the pane of a student's own operator (`--operator
// NAME=COMMAND`). It emits no trace of its own, so the pane shows only what
// is seen from outside: the requests its proxy counted (by verb and
// resource, so that polling and watching tell apart), the watch events it
// was delivered, its writes and the requests its Role denied, its processes,
// the Lease it holds if it elects a leader, and what the cluster shows.
func customBody(d Data, st *stats.Operator, w int, s *common.Theme) []string {
	out := []string{note(w, s, d.Words)}
	out = append(out, requests(d, st, w, s)...)
	out = append(out, watchEvents(d, st, w, s)...)
	out = append(out, writes(st, w, s, d.Words)...)
	out = append(out, replicas(d, st, w, s)...)
	out = append(out, ownLease(d, st, w, s), summary(d, w, s))
	out = append(out, batch(st, w, s, d.Words)...)
	out = append(out, Tree(d, st, w, s)...)
	return append(out, drift(d, st, w, s))
}

// note says once where this pane's knowledge comes from.
func note(w int, s *common.Theme, ws lessonview.Words) string {
	for _, n := range []string{"no trace of its own: seen from its proxy and the cluster", "no trace of its own: seen from outside"} {
		if n = ws.T(n); common.Width(n) <= w {
			return (&common.Line{}).Add(s.Dim, n).Fit(w)
		}
	}
	return (&common.Line{}).Add(s.Dim, ws.T("no own trace: seen from outside")).Fit(w)
}

// requests are the API requests: how many and how many a minute, whether
// the operator watches or only polls, then by verb, then by resource.
func requests(d Data, st *stats.Operator, w int, s *common.Theme) []string {
	ws := d.Words
	l := &common.Line{}
	l.Plain("API ").Add(s.Bold, strconv.Itoa(st.APITotal)).Plain(ws.T(" req"))
	l.Add(s.Dim, fmt.Sprintf(" · %d/min", st.PerMinute(d.Now)))
	verbs := stats.ByVerb(st.Verbs)
	switch reads, watches := readsAndWatches(verbs); {
	case watches > 0:
		l.Add(s.Dim, " · ").Add(s.OK, ws.T("watches"))
	case reads > 0:
		l.Add(s.Dim, " · ").Add(s.Warn, ws.T("polls: no watch"))
	}
	out := []string{l.Fit(w)}
	v := &common.Line{}
	if len(verbs) == 0 {
		v.Add(s.Dim, ws.T("no request yet"))
	}
	counts(v, verbs, s)
	out = append(out, v.Fit(w))
	n := customResources
	if d.Verbs {
		n = customResourcesMore
	}
	res := stats.ByResource(st.Verbs)
	for i, r := range res {
		if i == n {
			out = append(out, (&common.Line{}).Add(s.Dim, ws.F("  … %d more resources", len(res)-n)).Fit(w))
			break
		}
		rl := &common.Line{}
		rl.Add(s.Dim, "  "+r.Name+": ")
		counts(rl, r.Verbs, s)
		out = append(out, rl.Fit(w))
	}
	return out
}

func readsAndWatches(verbs []stats.Count) (reads, watches int) {
	for _, v := range verbs {
		switch v.Name {
		case "get", "list":
			reads += v.N
		case "watch":
			watches += v.N
		}
	}
	return reads, watches
}

// counts adds "get 20 list 1 watch 1", writes painted apart.
func counts(l *common.Line, cs []stats.Count, s *common.Theme) {
	for i, c := range cs {
		if i > 0 {
			l.Plain(" ")
		}
		p := s.Bold
		if stats.IsWrite(c.Name) {
			p = s.Accent
		}
		l.Plain(c.Name+" ").Add(p, strconv.Itoa(c.N))
	}
}

// watchEvents are the events its watches delivered, by resource, and the
// last one.
func watchEvents(d Data, st *stats.Operator, w int, s *common.Theme) []string {
	ws := d.Words
	we := &st.Watch
	l := &common.Line{}
	l.Plain(ws.T("watch events ")).Add(s.Bold, strconv.Itoa(we.N))
	if we.N == 0 {
		return []string{l.Fit(w), (&common.Line{}).Add(s.Dim, ws.T("  none delivered")).Fit(w)}
	}
	for i, r := range we.Resources() {
		sep := " · "
		if i == 0 {
			sep = ": "
		}
		l.Add(s.Dim, sep).Plain(r.Name + " " + strconv.Itoa(r.N))
	}
	last := &common.Line{}
	typ := we.Last.Type
	if typ == "" {
		typ = "unreadable"
	}
	what := we.Last.Object
	if what == "" {
		what = we.Last.Resource
	}
	p := s.Text
	if typ == "ERROR" || typ == "unreadable" {
		p = s.Err
	}
	if typ == "unreadable" {
		typ = ws.T("unreadable")
	}
	last.Add(s.Dim, ws.T("  last ")).Add(p, typ).Plain(" "+what).Add(s.Dim, " · "+ago(ws, d.Now.Sub(we.Last.At)))
	return []string{l.Fit(w), last.Fit(w)}
}

// writes are its requests that change the cluster, and those its Role
// denied (least privilege at work), flagged.
func writes(st *stats.Operator, w int, s *common.Theme, ws lessonview.Words) []string {
	l := &common.Line{}
	n := 0
	for k, c := range st.Verbs {
		if stats.IsWrite(k.Verb) {
			n += c
		}
	}
	l.Plain(ws.T("writes ")).Add(s.Bold, strconv.Itoa(n))
	if st.Denied.N == 0 {
		l.Add(s.Dim, ws.F(" · denied %d", 0))
		return []string{l.Fit(w)}
	}
	l.Add(s.Dim, " · ").Add(s.Err, ws.F("denied %d (403)", st.Denied.N))
	k := st.Denied.Last
	d := (&common.Line{}).Add(s.Err, "  ✗ "+k.Verb+" "+k.Resource).Add(s.Dim, ws.T(": not in its Role"))
	return []string{l.Fit(w), d.Fit(w)}
}

// replicas are its processes, as the supervisor reports them: one line
// each, crowned if its name is in the Lease's holder identity.
func replicas(d Data, st *stats.Operator, w int, s *common.Theme) []string {
	ws := d.Words
	names := st.ReplicaNames()
	if len(names) == 0 {
		return []string{(&common.Line{}).Add(s.Dim, ws.F("replica %s: not started yet", "a")).Fit(w)}
	}
	holder := ""
	if d.NS != nil && d.NS.Lease != nil {
		holder = d.NS.Lease.Holder
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		l := &common.Line{}
		replicaState(l, st.Replicas[n], s, ws)
		if holder != "" && holds(d.Style, n, holder) {
			l.Add(s.Crown, " ♛")
		}
		faultMark(l, st.Faults[n], s)
		out = append(out, l.Fit(w))
	}
	return out
}

// holds says whether identity names replica r of st: the identity rlab
// would give it ("mine-a-4121"), or one built on its POD_NAME ("mine-a",
// "mine-a_2f9c…"), as client-go's examples do.
func holds(st style.Style, r, identity string) bool {
	if s, rep, _, ok := style.ParseIdentity(identity); ok && s == st {
		return rep == r
	}
	pod := string(st) + "-" + r
	if !strings.HasPrefix(identity, pod) {
		return false
	}
	rest := identity[len(pod):]
	return rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z' || rest[0] >= '0' && rest[0] <= '9')
}

// ownLease is the Lease its operator made, if any: who holds it, and for
// how long. rlab cannot know whether it means to elect a leader, so no
// Lease is said as such, not as a fault.
func ownLease(d Data, st *stats.Operator, w int, s *common.Theme) string {
	ws := d.Words
	var lease *world.LeaseView
	if d.NS != nil {
		lease = d.NS.Lease
	}
	l := &common.Line{}
	if lease == nil {
		running := 0
		for _, r := range st.Replicas {
			if r.Running {
				running++
			}
		}
		l.Add(s.Dim, ws.T("Lease: none (no election seen)"))
		if running > 1 {
			l = (&common.Line{}).Add(s.Warn, ws.F("no Lease: %d replicas, all act", running))
		}
		return l.Fit(w)
	}
	l.Plain("Lease " + lease.Name + " ")
	left := lease.Renewed.Add(time.Duration(lease.DurationSeconds) * time.Second).Sub(d.Now)
	switch {
	case lease.Holder == "":
		l.Add(s.Warn, ws.T("released"))
	case left > 0:
		l.Add(s.Crown, lease.Holder).Plain(" " + ws.F("%.1fs left", left.Seconds()))
	default:
		l.Plain(lease.Holder).Add(s.Warn, " "+ws.T("expired"))
	}
	return l.Add(s.Dim, " · "+transitions(ws, int(lease.Transitions))).Fit(w)
}
