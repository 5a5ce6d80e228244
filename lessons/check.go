package lessons

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/sim/world"
)

// View is what a check looks at: the world now, the trace since the step
// began, and what was true when it began.
type View struct {
	Snapshot world.Snapshot
	Events   []trace.Event // since Began, in arrival order
	Began    time.Time     // the step was shown (or autoplay started it)
	Acted    time.Time     // the step's action ended (Began if none)
	Now      time.Time
	// Holders are the Lease holders by style when the step began.
	Holders  map[string]string
	Replicas []supervisor.Status
	// ByKind, if set, holds Events by kind (the Player keeps it as events
	// come), so that a check looks only at the kinds it asks about.
	ByKind map[trace.Kind][]trace.Event
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

type styleResult struct {
	ok, final bool
	detail    string
}

// Eval evaluates every condition of c over v: all must hold.
func (c *Check) Eval(v View) Outcome {
	out := Outcome{OK: true}
	var details []string
	for _, cond := range c.Conds {
		o := cond.Eval(v)
		out.OK = out.OK && o.OK
		out.Final = out.Final || o.Final
		details = append(details, cond.Kind+": "+o.Detail)
	}
	out.Detail = strings.Join(details, "; ")
	return out
}

// Eval evaluates one condition for each style it names.
func (c Cond) Eval(v View) Outcome {
	fn := condFuncs[c.Kind]
	out := Outcome{OK: true}
	var parts []string
	for _, st := range ExpandStyle(c.Args.Str("style")) {
		r := fn(c.Args, v, st)
		out.OK = out.OK && r.ok
		out.Final = out.Final || r.final
		parts = append(parts, st+" "+r.detail)
	}
	out.Detail = strings.Join(parts, ", ")
	return out
}

// Namespace is a style's namespace, as the sandbox names it.
func Namespace(style string) string { return "echo-" + style }

func nsView(v View, st string) *world.NamespaceView {
	if ns := v.Snapshot.Namespaces[Namespace(st)]; ns != nil {
		return ns
	}
	return &world.NamespaceView{}
}

// deploymentOf is Echo name's Deployment, under its Echo or orphaned.
func deploymentOf(v View, st, name string) *world.DeploymentView {
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
func eventsOf(v View, st string, kind trace.Kind, match func(trace.Event) bool) []trace.Event {
	var out []trace.Event
	for _, e := range v.kind(kind) {
		if (e.Namespace == Namespace(st) || e.Namespace == "" && string(e.Style()) == st) && (match == nil || match(e)) {
			out = append(out, e)
		}
	}
	return out
}

// worldLag is how much later than an operator the world may see a change.
const worldLag = 200 * time.Millisecond

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func msField(e trace.Event, k string) string {
	if n, ok := e.Num(k); ok {
		return secs(time.Duration(n * float64(time.Millisecond)))
	}
	return "?"
}

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

// condFuncs evaluate each condition kind for one style.
var condFuncs = map[string]func(a Args, v View, st string) styleResult{
	"echo_status": func(a Args, v View, st string) styleResult {
		e := nsView(v, st).Echoes[a.Str("name")]
		if e == nil {
			return styleResult{detail: "no Echo " + a.Str("name")}
		}
		return styleResult{ok: e.Ready == a.Str("ready"), detail: fmt.Sprintf("ready %q", e.Ready)}
	},
	"echo_absent": func(a Args, v View, st string) styleResult {
		e := nsView(v, st).Echoes[a.Str("name")]
		if e == nil {
			return styleResult{ok: true, detail: "gone"}
		}
		if e.Deleting {
			return styleResult{detail: fmt.Sprintf("being deleted (finalizers %v)", e.Finalizers)}
		}
		return styleResult{detail: "still there"}
	},
	"deployment_replicas": func(a Args, v View, st string) styleResult {
		d := deploymentOf(v, st, a.Str("name"))
		if d == nil {
			return styleResult{detail: "no Deployment " + echo.DeploymentName(a.Str("name"))}
		}
		n, _ := a.Int("replicas")
		ok := int(d.Replicas) == n && (!a.Bool("ready") || int(d.ReadyReplicas) == n)
		return styleResult{ok: ok, detail: fmt.Sprintf("replicas %d, %d ready", d.Replicas, d.ReadyReplicas)}
	},
	"deployment_absent": func(a Args, v View, st string) styleResult {
		if d := deploymentOf(v, st, a.Str("name")); d != nil {
			return styleResult{detail: d.Name + " still there"}
		}
		return styleResult{ok: true, detail: "gone"}
	},
	"owned": func(a Args, v View, st string) styleResult {
		d := deploymentOf(v, st, a.Str("name"))
		if d == nil {
			return styleResult{detail: "no Deployment"}
		}
		return styleResult{ok: d.Owner == "Echo/"+a.Str("name"), detail: fmt.Sprintf("controller %q", d.Owner)}
	},
	"orphaned": func(a Args, v View, st string) styleResult {
		d := deploymentOf(v, st, a.Str("name"))
		switch {
		case d == nil:
			return styleResult{detail: "no Deployment"}
		case d.Owner != "":
			return styleResult{detail: "still controlled by " + d.Owner}
		case nsView(v, st).Echoes[a.Str("name")] != nil:
			return styleResult{detail: "the Echo is still there"}
		}
		return styleResult{ok: true, detail: fmt.Sprintf("%s left with %d pods, no owner", d.Name, len(d.Pods))}
	},
	"converged": func(a Args, v View, st string) styleResult {
		e := nsView(v, st).Echoes[a.Str("name")]
		if e == nil {
			return styleResult{detail: "no Echo " + a.Str("name")}
		}
		// Only the Echo as it is now: an earlier edit may converge late.
		evs := eventsOf(v, st, trace.Converged, func(ev trace.Event) bool {
			g, _ := ev.Num("generation")
			return ev.Str("echo") == a.Str("name") && int64(g) == e.Generation
		})
		if len(evs) == 0 {
			return styleResult{detail: "not yet"}
		}
		return styleResult{ok: true, detail: "in " + msField(evs[0], "latency_ms")}
	},
	"noticed": func(a Args, v View, st string) styleResult {
		// From the edit as the world saw it: a student types the command
		// in another terminal, long after the step began, and a poll
		// before that noticed nothing.
		from := v.Acted
		if !v.Acted.After(v.Began) { // nothing autoplayed: measure from the edit
			e := nsView(v, st).Echoes[a.Str("name")]
			if e == nil || !e.Edited.After(v.Began) {
				return styleResult{detail: "no edit yet"}
			}
			// The world's watch may see the edit a little after an
			// operator's does.
			from = e.Edited.Add(-worldLag)
		}
		for _, e := range eventsOf(v, st, trace.ReconcileStart, func(e trace.Event) bool { return e.Object == "Echo/"+a.Str("name") }) {
			if e.Time.After(from) {
				why := e.Str("cause")
				if ev := e.Str("cause_event"); ev != "" {
					why += ": " + ev
				}
				return styleResult{ok: true, detail: fmt.Sprintf("after %s (%s)", secs(e.Time.Sub(from)), why)}
			}
		}
		return styleResult{detail: "not yet"}
	},
	"drift_repaired": func(a Args, v View, st string) styleResult {
		evs := eventsOf(v, st, trace.DriftRepaired, func(e trace.Event) bool {
			return e.Str("echo") == a.Str("name") && (a.Str("what") == "" || e.Str("what") == a.Str("what"))
		})
		if len(evs) == 0 {
			return styleResult{detail: "not repaired"}
		}
		return styleResult{ok: true, detail: evs[0].Str("what") + " repaired in " + msField(evs[0], "latency_ms")}
	},
	"gc_collected": func(a Args, v View, st string) styleResult {
		obj := "Deployment/" + echo.DeploymentName(a.Str("name"))
		evs := eventsOf(v, st, trace.GCCollected, func(e trace.Event) bool { return e.Object == obj })
		if len(evs) == 0 {
			return styleResult{detail: "not collected"}
		}
		pods := len(eventsOf(v, st, trace.GCCollected, func(e trace.Event) bool { return strings.HasPrefix(e.Object, "Pod/") }))
		return styleResult{ok: true, detail: fmt.Sprintf("collected %s after %s (and %d pods)", obj, secs(evs[0].Time.Sub(v.Acted)), pods)}
	},
	"flapping": func(a Args, v View, st string) styleResult {
		n := len(eventsOf(v, st, trace.DriftRepaired, func(e trace.Event) bool {
			return e.Str("echo") == a.Str("name") && e.Str("what") == "message"
		}))
		mn, _ := a.Int("min")
		return styleResult{ok: n >= mn, detail: fmt.Sprintf("message changed and put back %d times (want ≥%d)", n, mn)}
	},
	"deployment_message": func(a Args, v View, st string) styleResult {
		e := nsView(v, st).Echoes[a.Str("name")]
		d := deploymentOf(v, st, a.Str("name"))
		if e == nil || d == nil {
			return styleResult{detail: "no Echo or no Deployment"}
		}
		return styleResult{ok: d.Message == e.Message, detail: fmt.Sprintf("Deployment says %q, Echo %q", d.Message, e.Message)}
	},
	"has_finalizer": func(a Args, v View, st string) styleResult {
		e := nsView(v, st).Echoes[a.Str("name")]
		if e == nil {
			return styleResult{detail: "no Echo " + a.Str("name")}
		}
		return styleResult{ok: echo.HasFinalizer(e.Finalizers), detail: fmt.Sprintf("finalizers %v", e.Finalizers)}
	},
	"registered": func(a Args, v View, st string) styleResult {
		ns := nsView(v, st)
		e := ns.Echoes[a.Str("name")]
		switch {
		case e == nil:
			return styleResult{detail: "no Echo " + a.Str("name")}
		case ns.Registry == nil:
			return styleResult{detail: "no ConfigMap " + echo.RegistryName}
		case ns.Registry[e.Name] != e.UID:
			return styleResult{detail: fmt.Sprintf("%s not listed (entries %d)", e.Name, len(ns.Registry))}
		}
		return styleResult{ok: true, detail: echo.RegistryName + " lists " + e.Name}
	},
	"unregistered": func(a Args, v View, st string) styleResult {
		if uid, ok := nsView(v, st).Registry[a.Str("name")]; ok {
			return styleResult{detail: fmt.Sprintf("%s still lists %s (uid %s)", echo.RegistryName, a.Str("name"), uid)}
		}
		return styleResult{ok: true, detail: "not listed"}
	},
	"echo_deleting": func(a Args, v View, st string) styleResult {
		e := nsView(v, st).Echoes[a.Str("name")]
		switch {
		case e == nil:
			return styleResult{detail: "gone"}
		case !e.Deleting:
			return styleResult{detail: "not being deleted"}
		}
		return styleResult{ok: len(e.Finalizers) > 0, detail: fmt.Sprintf("being deleted, held by %v", e.Finalizers)}
	},
	"finalized": func(a Args, v View, st string) styleResult {
		obj := "Echo/" + a.Str("name")
		removed := eventsOf(v, st, trace.Finalizer, func(e trace.Event) bool { return e.Object == obj && e.Str("action") == "removed" })
		gone := eventsOf(v, st, trace.EchoDeleted, func(e trace.Event) bool { return e.Object == obj })
		switch {
		case len(removed) == 0:
			return styleResult{detail: "no cleanup yet"}
		case len(gone) == 0:
			return styleResult{detail: removed[0].Source + " cleaned up; the Echo is not gone yet"}
		}
		return styleResult{ok: true, detail: fmt.Sprintf("%s cleaned up; gone after waiting %s", removed[0].Source, msField(gone[0], "waited_ms"))}
	},
	"new_leader": func(a Args, v View, st string) styleResult {
		old := v.Holders[st]
		evs := eventsOf(v, st, trace.LeaderObserved, func(e trace.Event) bool {
			return e.Source == world.Source && e.Str("identity") != "" && e.Str("identity") != old
		})
		if len(evs) == 0 {
			return styleResult{detail: "still " + old}
		}
		took := evs[0].Time.Sub(v.Acted)
		r := styleResult{ok: true, detail: fmt.Sprintf("%s took over from %s after %s", evs[0].Str("identity"), old, secs(took))}
		if mn := a.Dur("min"); mn > 0 && took < mn {
			r.ok, r.final = false, true
			r.detail += fmt.Sprintf(", sooner than %s", mn)
		}
		if mx := a.Dur("max"); mx > 0 && took > mx {
			r.ok, r.final = false, true
			r.detail += fmt.Sprintf(", later than %s", mx)
		}
		return r
	},
	"leader_lost": func(a Args, v View, st string) styleResult {
		evs := eventsOf(v, st, trace.LeaderLost, func(e trace.Event) bool { return e.Str("reason") == "lost" })
		if len(evs) == 0 {
			return styleResult{detail: "nobody lost the Lease"}
		}
		return styleResult{ok: true, detail: fmt.Sprintf("%s lost it after %s", evs[0].Source, secs(evs[0].Time.Sub(v.Acted)))}
	},
	"replicas_running": func(a Args, v View, st string) styleResult {
		n, running := 0, 0
		for _, r := range v.Replicas {
			if r.Style == st {
				n++
				if r.Running {
					running++
				}
			}
		}
		return styleResult{ok: n > 0 && running == n, detail: fmt.Sprintf("%d of %d running", running, n)}
	},
	"replicas_paused": func(a Args, v View, st string) styleResult {
		n, paused := 0, 0
		for _, r := range v.Replicas {
			if r.Style == st {
				n++
				if r.Running && r.Paused {
					paused++
				}
			}
		}
		return styleResult{ok: n > 0 && paused == n, detail: fmt.Sprintf("%d of %d frozen", paused, n)}
	},
	"restarted": func(a Args, v View, st string) styleResult {
		started := map[string]time.Time{}
		for _, e := range v.kind(trace.ProcessStart) {
			if strings.HasPrefix(e.Object, st+"/") {
				started[e.Object] = e.Time
			}
		}
		n := 0
		for _, r := range v.Replicas {
			if r.Style == st {
				n++
			}
		}
		if len(started) < n {
			return styleResult{detail: fmt.Sprintf("%d of %d replicas restarted", len(started), n)}
		}
		holder, elected := "", st != "shell" // the shell loop elects no leader
		if l := nsView(v, st).Lease; l != nil {
			holder = l.Holder
		}
		// The identity is <style>-<replica>-<pid>: the leader is the replica
		// named in it, and it must have reconciled since its restart.
		for name, at := range started {
			if elected && !strings.HasPrefix(holder, strings.ReplaceAll(name, "/", "-")+"-") {
				continue
			}
			for _, e := range v.kind(trace.ReconcileEnd) {
				if e.Source == name && e.Time.After(at) {
					if !elected {
						return styleResult{ok: true, detail: "restarted and has reconciled"}
					}
					return styleResult{ok: true, detail: "restarted; " + name + " leads and has reconciled"}
				}
			}
			return styleResult{detail: name + " leads, no reconcile yet"}
		}
		return styleResult{detail: fmt.Sprintf("restarted; no restarted replica leads yet (holder %q)", holder)}
	},
	"api_requests": func(a Args, v View, st string) styleResult {
		over := a.Dur("over")
		if over > 0 && v.Now.Sub(v.Acted) < over {
			return styleResult{detail: "measuring for " + secs(over)}
		}
		code, hasCode := a.Int("code")
		n := 0
		for _, e := range v.kind(trace.APIRequest) {
			if !strings.HasPrefix(e.Source, "proxy/"+st+"/") {
				continue
			}
			if over > 0 && (e.Time.Before(v.Acted) || e.Time.After(v.Acted.Add(over))) {
				continue
			}
			if vs := a.List("verbs"); len(vs) > 0 && !slices.Contains(vs, e.Str("verb")) {
				continue
			}
			if r := a.Str("resource"); r != "" && e.Str("resource") != r {
				continue
			}
			if c, _ := e.Num("code"); hasCode && int(c) != code {
				continue
			}
			n++
		}
		ok, want := bounds(a, n)
		what := strings.Join(a.List("verbs"), "/")
		if r := a.Str("resource"); r != "" {
			what = strings.TrimSpace(what + " " + r)
		}
		if hasCode {
			what += fmt.Sprintf(" → %d", code)
		}
		if what == "" {
			what = "requests"
		}
		in := ""
		if over > 0 {
			in = " in " + secs(over)
		}
		return styleResult{ok: ok, detail: fmt.Sprintf("%d %s%s%s", n, what, in, want)}
	},
	"reconciles_after_edit": func(a Args, v View, st string) styleResult {
		evs := eventsOf(v, st, trace.ReconcileStart, func(e trace.Event) bool { return e.Object == "Echo/"+a.Str("name") })
		ok, want := bounds(a, len(evs))
		return styleResult{ok: ok, detail: fmt.Sprintf("%d reconciles%s", len(evs), want)}
	},
	"coalesced": func(a Args, v View, st string) styleResult {
		obj := "Echo/" + a.Str("name")
		informed := len(eventsOf(v, st, trace.InformerUpdate, func(e trace.Event) bool { return e.Object == obj }))
		starts := eventsOf(v, st, trace.ReconcileStart, func(e trace.Event) bool { return e.Object == obj })
		most := 0
		for _, e := range starts {
			if n, ok := e.Num("causes"); ok && int(n) > most {
				most = int(n)
			}
		}
		return styleResult{ok: most >= 2, detail: fmt.Sprintf("%d Echo updates → %d reconciles, one answered %d at once", informed, len(starts), most)}
	},
	"retries": func(a Args, v View, st string) styleResult {
		obj := "Echo/" + a.Str("name")
		evs := eventsOf(v, st, trace.QueueRequeue, func(e trace.Event) bool { return e.Object == obj && e.Str("reason") == "error" })
		var backoffs []string
		growing := true
		prev := -1.0
		for _, e := range evs {
			ms, _ := e.Num("after_ms")
			if ms < prev {
				growing = false
			}
			prev = ms
			backoffs = append(backoffs, fmt.Sprintf("%gms", ms))
		}
		mn, _ := a.Int("min")
		if len(backoffs) > 8 { // the screen is narrow: first and last few
			backoffs = append(append(backoffs[:4:4], "…"), backoffs[len(backoffs)-3:]...)
		}
		return styleResult{ok: len(evs) >= mn && growing, detail: fmt.Sprintf("%d retries, backoff %s", len(evs), strings.Join(backoffs, " "))}
	},
}
