package checks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/sim/world"
)

// Args are a condition's arguments, as the course validated them (an
// alias, so that the table of checks reads as the course's).
type Args = lessons.Args

// View is what a check looks at: the world now, the trace since the step
// began, and what was true when it began.
type View struct {
	Snapshot world.Snapshot
	Events   []trace.Event // since Began, in arrival order
	Began    time.Time     // the step was shown (or autoplay started it)
	// Acted is when autoplay's action ended, or else the first act found
	// since the step was shown (zero while there is none); Acts are the
	// acts by style.
	Acted time.Time
	Acts  Acts
	Now   time.Time
	// Holders are the Lease holders by style when the step began.
	Holders map[style.Style]string
	// Renewed is, by replica ("clientgo/a"), when it last renewed its
	// Lease, as far as rlab saw.
	Renewed  map[string]time.Time
	Replicas []supervisor.Status
	// Cut says, by replica, how rlab stands between it and the apiserver:
	// "" when it passes every request at once, else the partition or the
	// slowdown ("refuse", "latency 300ms").
	Cut map[string]string
	// ByKind, if set, holds Events by kind (the Player keeps it as events
	// come), so that a check looks only at the kinds it asks about.
	ByKind map[trace.Kind][]trace.Event
	// Sets are the last batch of each set of Echoes the player saw
	// converge, across steps (Player.noteSets).
	Sets map[SetKey]world.Batch
	// Grades are where the runs of rlab check's checks on the student's
	// operator stand, by gradeKey of the operator_check they are for.
	Grades map[string]Grade
}

// kind is the step's events of one kind, in arrival order.
func (v View) kind(k trace.Kind) []trace.Event {
	if v.ByKind != nil {
		return v.ByKind[k]
	}
	var out []trace.Event
	for _, e := range v.Events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// Outcome is one evaluation of a check.
type Outcome struct {
	OK     bool
	Detail string // what was seen, in numbers, per style
	// Final means it can never pass any more (e.g. a takeover came too soon).
	Final bool
}

// styleResult is one condition's outcome for one style.
type styleResult struct {
	ok, final bool
	detail    string
}

// Eval evaluates every condition of c over v: all must hold.
func Eval(c *lessons.Check, v View) Outcome {
	out := Outcome{OK: true}
	var details []string
	for _, cond := range c.Conds {
		o := EvalCond(cond, v)
		out.OK = out.OK && o.OK
		out.Final = out.Final || o.Final
		details = append(details, cond.Kind+": "+o.Detail)
	}
	out.Detail = strings.Join(details, "; ")
	return out
}

// EvalCond evaluates one condition for each style it names.
func EvalCond(c lessons.Cond, v View) Outcome {
	eval := checks[c.Kind].eval
	out := Outcome{OK: true}
	var parts []string
	for _, st := range c.Args.Styles() {
		r := eval(c.Args, v, st)
		out.OK = out.OK && r.ok
		out.Final = out.Final || r.final
		if st == "" { // the student's, no style's
			parts = append(parts, r.detail)
			continue
		}
		if !r.ok {
			r.detail += refused(v, st)
		}
		parts = append(parts, string(st)+" "+r.detail)
	}
	out.Detail = strings.Join(parts, ", ")
	return out
}

// refused says, for a check that fails, that the namespace's quota refuses
// pods to a Deployment of st's (a classroom's, rlab classroom prepare's), in
// the apiserver's words, and what to do; "" if nothing is refused.
func refused(v View, st style.Style) string {
	ns := nsView(v, st)
	var ds []*world.DeploymentView
	for _, e := range ns.Echoes {
		if e.Deployment != nil {
			ds = append(ds, e.Deployment)
		}
	}
	ds = append(ds, ns.Orphans...)
	slices.SortFunc(ds, func(a, b *world.DeploymentView) int { return strings.Compare(a.Name, b.Name) })
	for _, d := range ds {
		if strings.Contains(d.Refused, "exceeded quota") {
			return fmt.Sprintf(" (the namespace's quota refuses Deployment %s its pods, the apiserver says: %s. kubectl describe quota says what it allows: delete Echoes you made, kubectl get ec lists them)", d.Name, d.Refused)
		}
	}
	return ""
}

// nsView is what the world sees in st's namespace (empty if nothing).
func nsView(v View, st style.Style) *world.NamespaceView {
	if ns := v.Snapshot.Style(st); ns != nil {
		return ns
	}
	return &world.NamespaceView{}
}

// echoOf is Echo name in st's namespace, or nil and the result that says
// it is missing.
func echoOf(a Args, v View, st style.Style) (*world.EchoView, styleResult) {
	return nsView(v, st).Echoes[a.Str("name")], styleResult{detail: "no Echo " + a.Str("name")}
}

// deploymentOf is Echo name's Deployment, under its Echo or orphaned.
func deploymentOf(v View, st style.Style, name string) *world.DeploymentView {
	ns := nsView(v, st)
	if e := ns.Echoes[name]; e != nil && e.Deployment != nil {
		return e.Deployment
	}
	for _, d := range ns.Orphans {
		if d.Name == echo.DeploymentName(name) {
			return d
		}
	}
	return nil
}

// eventsOf are the events since the step began in st's namespace.
func eventsOf(v View, st style.Style, kind trace.Kind, match func(trace.Event) bool) []trace.Event {
	var out []trace.Event
	for _, e := range v.kind(kind) {
		if (style.FromNamespace(e.Namespace) == st || e.Namespace == "" && e.Style() == st) && (match == nil || match(e)) {
			out = append(out, e)
		}
	}
	return out
}

// replicasOf counts st's replicas, and those for which is holds.
func replicasOf(v View, st style.Style, is func(supervisor.Status) bool) (n, yes int) {
	for _, r := range v.Replicas {
		if r.Style == st {
			n++
			if is(r) {
				yes++
			}
		}
	}
	return n, yes
}

// WorldLag is how much later than an operator the world may see a change.
const WorldLag = 200 * time.Millisecond

func Secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// msField is a field in milliseconds, in seconds for a sentence.
func msField(ms float64) string {
	return Secs(time.Duration(ms * float64(time.Millisecond)))
}

// bounds says whether n is within the min and max arguments, and what they
// want, for a sentence.
func bounds(a Args, n int) (bool, string) {
	ok := true
	var want []string
	if mn, has := a.Int("min"); has {
		ok = ok && n >= mn
		want = append(want, fmt.Sprintf("≥%d", mn))
	}
	if mx, has := a.Int("max"); has {
		ok = ok && n <= mx
		want = append(want, fmt.Sprintf("≤%d", mx))
	}
	if len(want) == 0 {
		return ok, ""
	}
	return ok, " (want " + strings.Join(want, " and ") + ")"
}

// SetKey names a set of Echoes in one style: those create_echoes made
// with prefix.
type SetKey struct {
	Style  style.Style
	Prefix string
}

// OrphansGone says whether one of the Deployments named is no longer an
// orphan in ns: deleted by hand (or adopted, which nothing here does).
func OrphansGone(ns *world.NamespaceView, names []string) bool {
	if ns == nil {
		return false
	}
	for _, name := range names {
		if !slices.ContainsFunc(ns.Orphans, func(d *world.DeploymentView) bool { return d.Name == name }) {
			return true
		}
	}
	return false
}
