// Package pane draws one operator style's pane: its pipeline with a marker on
// the stage of the latest event, the queue or the shell loop's poll timer,
// API requests, reconciles and their cause, the leader, its Echoes and the
// last batch's throughput, the object tree and the last drift repair.
package pane

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/stats"
)

// Data is what one pane shows.
type Data struct {
	Style style.Style
	Stats *stats.Operator
	NS    *world.NamespaceView // nil before the first snapshot
	Echo  string               // the Echo shown
	Now   time.Time
	// Fresh says whether a pod appeared recently (it fades in).
	Fresh func(pod string) bool
	// Verbs: the API requests are shown by verb too.
	Verbs   bool
	Focused bool
	// Summary counts all the style's Echoes (the tree shows Echo only).
	Summary Summary
	// Words are the pane's own words in the screen's language (nil:
	// English).
	Words lessonview.Words
	// Starting: the sandbox's start-up goes on behind the screen, and a
	// replica not seen yet is starting, not waiting.
	Starting bool
}

// Summary is what a pane says of all its style's Echoes: a class runs
// hundreds, too many to list.
type Summary struct {
	Echoes, Ready   int // Echoes, and those whose status says every replica is ready
	Pods, PodsReady int // pods of their Deployments
}

// Timing of the animations.
const (
	MarkerHot  = time.Second            // the marker is lit this long after an event
	FlashFor   = 4 * time.Second        // a collected object flashes this long
	FlashEvery = 250 * time.Millisecond // flash phase
)

// Render draws the pane, frame included, exactly w×h.
func Render(d Data, w, h int, s *common.Theme) []string {
	body := Body(d, common.BoxInner(w), s)
	title := d.Style.Traits().Title
	tp := s.OpTitle(d.Style)
	border := s.Border
	if d.Focused {
		border = s.OpPaint(d.Style)
		title = "▶ " + title
	}
	return common.BoxFitted(tp.S(title), common.Width(title), body, w, h, border)
}

// Body is the pane's content lines, each at most w columns wide.
func Body(d Data, w int, s *common.Theme) []string {
	st := d.Stats
	if st == nil {
		st = stats.New([]style.Style{d.Style}).Styles[d.Style]
	}
	if !d.Style.Traits().Traces {
		return customBody(d, st, w, s)
	}
	pipe, marker := Pipeline(d.Style, st, d.Now, w, s, d.Words)
	out := []string{pipe, marker, work(d, st, w, s)}
	out = append(out, api(d, st, w, s)...)
	out = append(out, reconciles(d, st, w, s)...)
	out = append(out, leader(d, st, w, s)...)
	out = append(out, summary(d, w, s))
	out = append(out, batch(st, w, s, d.Words)...)
	out = append(out, Tree(d, st, w, s)...)
	return append(out, drift(d, st, w, s))
}

// ago says how long ago in ws's language, as common.Ago: "now", "4s ago".
func ago(ws lessonview.Words, d time.Duration) string {
	a := common.Ago(d)
	switch {
	case ws == nil:
		return a
	case d < time.Second:
		return ws.T("now")
	}
	return ws.F("%s ago", strings.TrimSuffix(a, " ago"))
}

// transitions is the Lease's transitions, as common.Plural says them.
func transitions(ws lessonview.Words, n int) string {
	if n == 1 {
		return ws.T("1 transition")
	}
	return ws.F("%d transitions", n)
}

// summary counts all the style's Echoes and their pods: a class runs
// hundreds, and the tree shows the focused one only.
func summary(d Data, w int, s *common.Theme) string {
	ws := d.Words
	l := &common.Line{}
	if d.NS == nil {
		return l.Add(s.Dim, ws.T("Echoes …")).Fit(w)
	}
	sm := d.Summary
	l.Plain(ws.T("Echoes ")).Add(s.Bold, strconv.Itoa(sm.Echoes))
	l.Add(s.Dim, " · ").Plain(ws.F("%d ready", sm.Ready))
	l.Add(s.Dim, " · ").Plain(ws.F("pods %d/%d ready", sm.PodsReady, sm.Pods))
	return l.Fit(w)
}

// batch is the style's throughput: the last batch of Echoes created
// together, how many converged and how long from the first created to the
// last converged, as the world reported them (stats.Operator.Batch). None
// for a batch of one: the Echo's own line says how long it took.
func batch(st *stats.Operator, w int, s *common.Theme, ws lessonview.Words) []string {
	b := st.Batch
	if b == nil || b.N < 2 {
		return nil
	}
	l := &common.Line{}
	l.Plain("batch: ").Add(s.Bold, ws.F("%d Echoes converged in %s", b.N, took(ms(b.Took()))))
	if r := b.PerSecond(); r > 0 {
		l.Add(s.Dim, fmt.Sprintf(" · %.1f/s", r))
	}
	return []string{l.Fit(w)}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Summarize counts a namespace's Echoes, those whose status says every
// replica is ready, and their pods.
func Summarize(ns *world.NamespaceView) Summary {
	var sum Summary
	for _, e := range ns.Echoes {
		sum.Echoes++
		if readyAll(e) {
			sum.Ready++
		}
		if d := e.Deployment; d != nil {
			sum.Pods += len(d.Pods)
			for _, p := range d.Pods {
				if p.Ready && !p.Deleting {
					sum.PodsReady++
				}
			}
		}
	}
	return sum
}

// readyAll says whether e's status is "n/n" for its n replicas, without
// building the string.
func readyAll(e *world.EchoView) bool {
	r, d, ok := strings.Cut(e.Ready, "/")
	return ok && r == d && d == strconv.Itoa(int(e.Replicas))
}

// work is the shell loop's poll timer, or a Go style's workqueue.
func work(d Data, st *stats.Operator, w int, s *common.Theme) string {
	ws := d.Words
	l := &common.Line{}
	if !d.Style.Traits().Polls {
		queue := ws.T("queue ")
		depth := ws.F(" depth %d", st.Depth)
		counts := ws.F(" · adds %d · retries %d", st.Adds, st.Retries)
		v := st.Spark(d.Now)
		// The sparkline takes the room the numbers leave, 8 to SparkLen.
		n := min(max(w-common.Width(queue)-common.Width(depth)-common.Width(counts), 8), len(v))
		l.Plain(queue).Add(s.OpPaint(d.Style), Spark(v[len(v)-n:]))
		l.Plain(depth).Add(s.Dim, counts)
		return l.Fit(w)
	}
	next, ok := st.NextPoll()
	if !ok {
		return l.Add(s.Dim, ws.T("waiting for the first poll")).Fit(w)
	}
	// The sleep starts once the poll's last kubectl returned.
	if left := next.Sub(d.Now); left > 0 && st.Running == nil {
		l.Plain(ws.T("next poll in ")).Add(s.Accent, fmt.Sprintf("%.1fs", left.Seconds()))
	} else {
		l.Add(s.Accent, ws.T("polling now"))
	}
	return l.Add(s.Dim, ws.F(" · every %s", common.Dur(st.PollInterval))).Fit(w)
}

// api is the API requests: how many, how many a minute, and by verb if
// asked.
func api(d Data, st *stats.Operator, w int, s *common.Theme) []string {
	ws := d.Words
	l := &common.Line{}
	l.Plain("API ").Add(s.Bold, fmt.Sprintf("%d", st.APITotal)).Plain(ws.T(" req"))
	l.Add(s.Dim, fmt.Sprintf(" · %d/min", st.PerMinute(d.Now)))
	// The client limit goes on the same line if it fits; a Go style's gets a
	// line of its own otherwise.
	var own string
	if c := (&common.Line{}); clientLimit(c, d.Style, st, s, ws) {
		switch {
		case l.Width()+3+c.Width() <= w:
			l.Add(s.Dim, " · ")
			clientLimit(l, d.Style, st, s, ws)
		case !d.Style.Traits().Polls:
			own = c.Fit(w)
		}
	}
	out := []string{l.Fit(w)}
	if own != "" {
		out = append(out, own)
	}
	if !d.Verbs {
		return out
	}
	for i, v := range stats.TopVerbs(st.Verbs) {
		if i == 4 {
			out = append(out, (&common.Line{}).Add(s.Dim, ws.F("  … %d more", len(st.Verbs)-4)).Fit(w))
			break
		}
		out = append(out, (&common.Line{}).Add(s.Dim, fmt.Sprintf("  %5d %s", v.Count, v.Key)).Fit(w))
	}
	return out
}

// clientLimit adds the client-side rate limit of the style's API client to
// l, as the replicas reported what their library set; false if there is
// nothing to say. Whether a request waited for it is not seen from outside,
// so nothing is claimed about throttling.
func clientLimit(l *common.Line, op style.Style, st *stats.Operator, s *common.Theme, ws lessonview.Words) bool {
	switch lim := st.Limit; {
	case op.Traits().Polls:
		l.Add(s.Dim, ws.T("a new kubectl per call: no shared limiter"))
	case lim == nil:
		return false // not reported (yet, or a recording from before)
	case lim.None():
		l.Plain(ws.T("client limit ")).Add(s.Bold, ws.T("none")).Add(s.Dim, ws.T(" (server APF only)"))
	default:
		l.Plain(ws.T("client limit ")).Add(s.Bold, strconv.FormatFloat(lim.QPS, 'f', -1, 64)+"/s burst "+strconv.Itoa(lim.Burst))
	}
	return true
}

// reconciles is two lines: the count and the last (or running) call, then
// its cause, or its error.
func reconciles(d Data, st *stats.Operator, w int, s *common.Theme) []string {
	ws := d.Words
	l := &common.Line{}
	l.Plain(ws.T("reconciles ")).Add(s.Bold, fmt.Sprintf("%d", st.Reconciles))
	cause := ""
	switch {
	case st.Running != nil:
		running := ws.T("running …")
		if n := st.InFlight(); n > 1 {
			running = ws.F("%d running …", n) // workers reconcile several Echoes at once
		}
		l.Plain(" · ").Add(s.Accent, running)
		cause = causeOf(st.Running)
	case st.Last != nil:
		r := st.Last
		l.Plain(" · " + common.MS(r.DurationMS) + " ")
		if r.Result == trace.ResultError {
			l.Add(s.Err, r.Result)
		} else {
			l.Add(s.OK, r.Result)
		}
		if r.Changed != "" && r.Changed != trace.ChangedNone {
			l.Plain(", " + r.Changed)
		}
		l.Add(s.Dim, " · "+ago(ws, d.Now.Sub(r.End)))
		cause = causeOf(r)
	}
	l2 := &common.Line{}
	switch {
	case st.Last != nil && st.Last.Result == trace.ResultError && st.Running == nil:
		l2.Add(s.Err, ws.T("error: ")).Plain(st.Last.Error)
	case cause != "":
		l2.Add(s.Dim, ws.T("cause: ")).Plain(cause)
	default:
		l2.Add(s.Dim, ws.T("cause: ")+"—")
	}
	return []string{l.Fit(w), l2.Fit(w)}
}

func causeOf(r *stats.Reconcile) string {
	c := r.CauseEvent
	if c == "" {
		c = r.Cause
	} else if r.Cause != "" && r.Cause != trace.CauseEvent && r.Cause != trace.CausePoll {
		c = r.Cause + ": " + c
	}
	if r.Causes > 1 {
		c += fmt.Sprintf(" (+%d)", r.Causes-1)
	}
	return c
}

// Pipeline is the pipeline line and the marker line under it.
// ws are the words of the screen's language (nil: English).
func Pipeline(op style.Style, st *stats.Operator, now time.Time, w int, s *common.Theme, ws lessonview.Words) (string, string) {
	names := op.Traits().Stages
	sep := " ▸ "
	total := func(names []string, sep string) int {
		n := (len(names) - 1) * common.Width(sep)
		for _, x := range names {
			n += len(x)
		}
		return n
	}
	if total(names, sep) > w {
		sep = "▸"
	}
	if total(names, sep) > w {
		short := make([]string, len(names))
		for i, x := range names {
			short[i] = x[:min(len(x), 4)]
		}
		names = short
	}
	hot := st.Stage >= 0 && now.Sub(st.StageAt) < MarkerHot
	pipe := &common.Line{}
	pos := 0
	for i, x := range names {
		if i > 0 {
			pipe.Add(s.Dim, sep)
		}
		if i == st.Stage {
			pos = pipe.Width() + (len(x)-1)/2
			if hot {
				pipe.Add(s.Reverse, x)
			} else {
				pipe.Add(s.OpBold[op], x)
			}
		} else {
			pipe.Plain(x)
		}
	}
	mark := &common.Line{}
	if st.Stage >= 0 {
		mark.Pad(pos)
		if hot {
			mark.Add(s.OpBold[op], "▲")
		} else {
			mark.Add(s.Dim, "△")
		}
		if !hot {
			mark.Add(s.Dim, " "+ago(ws, now.Sub(st.StageAt)))
		}
	}
	return pipe.Fit(w), mark.Fit(w)
}

// Spark draws depths as a sparkline, scaled to at least 4.
func Spark(v []int) string {
	const bars = "▁▂▃▄▅▆▇█"
	top := 4
	for _, x := range v {
		top = max(top, x)
	}
	var b strings.Builder
	r := []rune(bars)
	for _, x := range v {
		i := 0
		if x > 0 {
			i = 1 + (x-1)*(len(r)-2)/max(top-1, 1)
		}
		b.WriteRune(r[min(i, len(r)-1)])
	}
	return b.String()
}

// leader is two lines: who holds the Lease (crowned) and the standby, then
// the Lease's remaining time and transitions.
func leader(d Data, st *stats.Operator, w int, s *common.Theme) []string {
	ws := d.Words
	if !d.Style.Traits().ElectsLeader {
		return noElection(st, w, d.Starting, s, ws)
	}
	var lease *world.LeaseView
	if d.NS != nil {
		lease = d.NS.Lease
	}
	holder := st.Leader
	if lease != nil {
		holder = ""
		if lease.Holder != "" {
			holder = stats.ReplicaOfIdentity(lease.Holder)
		}
	}
	l1 := &common.Line{}
	l1.Plain(ws.T("leader: "))
	if holder == "" {
		l1.Add(s.Warn, ws.T("none")+" ")
	}
	for i, n := range holderFirst(st, holder) {
		if i > 0 || holder == "" {
			l1.Plain("  ")
		}
		candidate(l1, n, st.Replicas[n], n == holder, d.Starting, s, ws)
		faultMark(l1, st.Faults[n], s)
	}
	return []string{l1.Fit(w), leaseLine(lease, d.Now, s, ws).Fit(w)}
}

// noElection is the shell loop's leader lines: none, and how many act.
func noElection(st *stats.Operator, w int, starting bool, s *common.Theme, ws lessonview.Words) []string {
	l1, l2 := &common.Line{}, &common.Line{}
	l1.Plain(ws.T("leader: ")).Add(s.Dim, ws.T("none"))
	running := 0
	for _, r := range st.Replicas {
		if r.Running {
			running++
		}
	}
	if running > 1 {
		l1.Add(s.Warn, ws.F(" (%d replicas, no election: all act)", running))
	} else {
		l1.Plain(ws.T(" (1 replica, no election)"))
	}
	if r := st.Replicas["a"]; r != nil {
		replicaState(l2, r, s, ws)
		faultMark(l2, st.Faults["a"], s)
	} else if starting {
		l2.Add(s.Dim, ws.F("replica %s starting", "a"))
	}
	return []string{l1.Fit(w), l2.Fit(w)}
}

// holderFirst are the replicas, the holder first, then the standby.
func holderFirst(st *stats.Operator, holder string) []string {
	names := st.ReplicaNames()
	if len(names) == 0 {
		names = []string{"a", "b"}
	}
	for i, n := range names {
		if n == holder && i > 0 {
			return append([]string{n}, append(names[:i:i], names[i+1:]...)...)
		}
	}
	return names
}

// candidate says how replica n (r, nil if never seen) stands.
func candidate(l *common.Line, n string, r *stats.Replica, holds, starting bool, s *common.Theme, ws lessonview.Words) {
	switch {
	case r != nil && r.Running && r.Paused:
		l.Add(s.Warn, ws.F("%s frozen", n))
		if holds {
			l.Add(s.Crown, " ♛")
		}
	case holds && (r == nil || r.Running):
		l.Add(s.Crown, n+" ♛")
	case holds:
		l.Add(s.Err, ws.F("%s ✝ holds a dead lease", n))
	case r != nil && !r.Running:
		l.Add(s.Err, ws.F("%s down", n))
		if r.Signal != "" {
			l.Add(s.Dim, " ("+r.Signal+")")
		}
	case r == nil && starting:
		l.Add(s.Dim, ws.F("%s starting", n))
	default:
		l.Add(s.Dim, ws.F("%s waiting", n))
	}
}

// leaseLine is the Lease's time left and transitions.
func leaseLine(lease *world.LeaseView, now time.Time, s *common.Theme, ws lessonview.Words) *common.Line {
	l := &common.Line{}
	if lease == nil {
		return l.Add(s.Dim, ws.T("no Lease yet"))
	}
	left := lease.Renewed.Add(time.Duration(lease.DurationSeconds) * time.Second).Sub(now)
	l.Plain("lease ")
	switch {
	case lease.Holder == "":
		l.Add(s.Warn, ws.T("released"))
	case left > 0:
		l.Plain(ws.F("%.1fs left", left.Seconds()))
	default:
		l.Add(s.Warn, ws.F("expired %s ago", common.Dur(-left)))
	}
	return l.Add(s.Dim, " · "+transitions(ws, int(lease.Transitions)))
}

// faultMark names the faults on at a replica's proxy, if any.
func faultMark(l *common.Line, kinds []string, s *common.Theme) {
	if len(kinds) > 0 {
		l.Add(s.Warn, " ⚠ "+strings.Join(kinds, ","))
	}
}

func replicaState(l *common.Line, r *stats.Replica, s *common.Theme, ws lessonview.Words) {
	if r.Running && r.Paused {
		l.Add(s.Warn, ws.F("replica %s pid %d frozen", r.Name, r.PID))
		return
	}
	if r.Running {
		l.Add(s.Dim, ws.F("replica %s pid %d · restarts %d", r.Name, r.PID, r.Restarts))
		return
	}
	l.Add(s.Err, ws.F("replica %s down", r.Name))
	if r.Signal != "" {
		l.Add(s.Dim, " ("+r.Signal+")")
	}
}

// drift is the last drift repair line.
func drift(d Data, st *stats.Operator, w int, s *common.Theme) string {
	ws := d.Words
	l := &common.Line{}
	switch dr := st.Drift; {
	case dr == nil:
		l.Add(s.Dim, ws.T("drift: none yet"))
	case dr.Repaired.IsZero():
		l.Add(s.Warn, ws.F("drift: %s", dr.What)).Plain(ws.F(" · not repaired, since %s", ago(ws, d.Now.Sub(dr.Detected))))
	default:
		l.Plain(ws.T("drift repaired in ")).Add(s.Bold, common.MS(dr.LatencyMS)).Add(s.Dim, " ("+dr.What+")")
	}
	// Two writers taking a field from each other, counted: a fight.
	if h := st.Handover; h != nil {
		l.Add(s.Dim, " · ").Add(s.Warn, ws.F("%s changed owners %d×", h.Path, h.Count)).
			Add(s.Dim, ws.F(" (last %s → %s)", h.From, h.To))
	}
	return l.Fit(w)
}
