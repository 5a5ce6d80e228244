package lessons

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/sim/world"
)

// checkKind is one check a lesson can name: the arguments it takes, how it
// is evaluated, and the sentence the student reads. Adding a check is
// adding an entry to checks (and a line to README.md).
type checkKind struct {
	args spec
	// eval looks at v for one style of the style argument.
	eval func(a Args, v View, st style.Style) styleResult
	// words says what it waits for, after "every style: " (see
	// Cond.DescribeIn), every English fragment through s.f.
	words func(s say, a Args) string
}

// condOperatorCheck grades the student's operator with rlab check's checks.
const condOperatorCheck = "operator_check"

// checks is the closed set of checks, over the world model and the trace
// events since the step began.
var checks = map[string]checkKind{
	// rlab check's checks (IDs of sim/feature/check) pass on the lesson's operator
	// in one run. The runs go on in the background while the step waits
	// (Player.grade); until one passes, the detail is the failing checks'
	// reasons, which the lesson panel shows.
	condOperatorCheck: {
		args: spec{required: argTypes{"operator": tOperator, "checks": tChecks}},
		eval: func(a Args, v View, st style.Style) styleResult {
			g, ok := v.Grades[gradeKey(a)]
			if !ok {
				return styleResult{detail: "not checked yet"}
			}
			return g.result(a.List("checks"))
		},
		words: func(s say, a Args) string {
			return s.f("passes rlab check's %s", strings.Join(a.List("checks"), ", "))
		},
	},

	// The Echo's status.ready reads ready.
	"echo_status": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "ready": tString}},
		eval: func(a Args, v View, st style.Style) styleResult {
			e, missing := echoOf(a, v, st)
			if e == nil {
				return missing
			}
			return styleResult{ok: e.Ready == a.Str("ready"), detail: fmt.Sprintf("ready %q", e.Ready)}
		},
		words: func(s say, a Args) string { return s.f("Echo %s reports ready %s", a.Str("name"), a.Str("ready")) },
	},

	// The Echo's status is about its current spec (status.observedGeneration
	// equals metadata.generation), or, with current: false, about an older
	// one.
	"status_current": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "current": tBool}},
		eval: func(a Args, v View, st style.Style) styleResult {
			e, missing := echoOf(a, v, st)
			if e == nil {
				return missing
			}
			current := e.StatusCurrent()
			return styleResult{ok: current == a.Bool("current"),
				detail: fmt.Sprintf("generation %d, status.observedGeneration %d, ready %q", e.Generation, e.ObservedGeneration, e.Ready)}
		},
		words: func(s say, a Args) string {
			if a.Bool("current") {
				return s.f("Echo %s's status is about its current spec (observedGeneration = generation)", a.Str("name"))
			}
			return s.f("Echo %s's status is about an older spec (observedGeneration < generation)", a.Str("name"))
		},
	},

	// The Echo's status has condition type (Ready, Progressing) with
	// status (True, False or Unknown).
	"echo_condition": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "type": tString, "status": tString}},
		eval: func(a Args, v View, st style.Style) styleResult {
			e, missing := echoOf(a, v, st)
			if e == nil {
				return missing
			}
			got, ok := e.Conditions[a.Str("type")]
			if !ok {
				return styleResult{detail: "no condition " + a.Str("type")}
			}
			return styleResult{ok: got == a.Str("status"), detail: fmt.Sprintf("%s %s", a.Str("type"), got)}
		},
		words: func(s say, a Args) string {
			return s.f("Echo %s has condition %s %s", a.Str("name"), a.Str("type"), a.Str("status"))
		},
	},

	// Every pod the Echo asks for is ready, and its status.ready does not
	// say so: nothing brought the Echo back to the queue.
	"status_behind": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			e, missing := echoOf(a, v, st)
			if e == nil {
				return missing
			}
			d := e.Deployment
			if d == nil {
				return styleResult{detail: "no Deployment"}
			}
			all := fmt.Sprintf("%d/%d", e.Replicas, e.Replicas)
			ok := d.Replicas == e.Replicas && d.ReadyReplicas == e.Replicas && e.Ready != all
			return styleResult{ok: ok, detail: fmt.Sprintf("Deployment %d of %d ready, status.ready %q", d.ReadyReplicas, d.Replicas, e.Ready)}
		},
		words: func(s say, a Args) string {
			return s.f("every pod of Echo %s is ready and its status.ready says otherwise", a.Str("name"))
		},
	},

	// The field manager owns spec.replicas of the Echo's Deployment (alone,
	// or with others that applied the same value).
	"replicas_owner": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "manager": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			d := deploymentOf(v, st, a.Str("name"))
			if d == nil {
				return styleResult{detail: "no Deployment"}
			}
			return styleResult{ok: slices.Contains(d.ReplicasOwners, a.Str("manager")),
				detail: "spec.replicas owned by " + strings.Join(d.ReplicasOwners, ", ")}
		},
		words: func(s say, a Args) string {
			return s.f("field manager %s owns spec.replicas of Deployment %s", a.Str("manager"), echo.DeploymentName(a.Str("name")))
		},
	},

	// spec.replicas of the Echo's Deployment changed owners (field
	// managers) at least min times since the step began: writers taking it
	// from each other.
	"handovers": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}, optional: argTypes{"min": tInt, "max": tInt}},
		eval: func(a Args, v View, st style.Style) styleResult {
			obj := trace.Object("Deployment", echo.DeploymentName(a.Str("name")))
			evs := eventsOf(v, st, trace.Handover, func(e trace.Event) bool { return e.Object == obj })
			ok, want := bounds(a, len(evs))
			detail := fmt.Sprintf("%d%s", len(evs), want)
			if len(evs) > 0 {
				last := evs[len(evs)-1]
				detail += ", last " + trace.As[trace.Ownership](last).From + " → " + trace.As[trace.Ownership](last).To
			}
			return styleResult{ok: ok, detail: detail}
		},
		words: func(s say, a Args) string {
			return s.f("spec.replicas of Deployment %s changes owners%s", echo.DeploymentName(a.Str("name")), s.want(a))
		},
	},

	// The Echo is gone.
	"echo_absent": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			e := nsView(v, st).Echoes[a.Str("name")]
			if e == nil {
				return styleResult{ok: true, detail: "gone"}
			}
			if e.Deleting {
				return styleResult{detail: fmt.Sprintf("being deleted (finalizers %v)", e.Finalizers)}
			}
			return styleResult{detail: "still there"}
		},
		words: func(s say, a Args) string { return s.f("Echo %s is gone", a.Str("name")) },
	},

	// Every Echo of a set (create_echoes) is there and reports ready n/n.
	"echoes_ready": {
		args: spec{required: argTypes{"style": tStyle, "prefix": tName, "count": tInt}},
		eval: func(a Args, v View, st style.Style) styleResult {
			n, _ := a.Int("count")
			ns, ready := nsView(v, st), 0
			for i := 1; i <= n; i++ {
				if e := ns.Echoes[sandbox.SetName(a.Str("prefix"), i)]; e != nil && e.Ready != "" &&
					e.Ready == fmt.Sprintf("%d/%d", e.Replicas, e.Replicas) {
					ready++
				}
			}
			return styleResult{ok: ready == n, detail: fmt.Sprintf("%d of %d ready", ready, n)}
		},
		words: func(s say, a Args) string {
			n, _ := a.Int("count")
			return s.f("all %d Echoes %s report every replica ready", n, setNames(a.Str("prefix"), n))
		},
	},

	// Every Echo of a set (create_echoes) converged after its creation
	// since the step began, as the world reported it: the set as one batch
	// (world.Batch, what a pane's batch line shows), timed from the first
	// created to the last converged, at least min and at most max, and in
	// less time than the set faster_than took in an earlier step, if it
	// was timed.
	"echoes_converged": {
		args: spec{required: argTypes{"style": tStyle, "prefix": tName, "count": tInt},
			optional: argTypes{"min": tDuration, "max": tDuration, "faster_than": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			n, _ := a.Int("count")
			b := setBatch(v, st, a.Str("prefix"), n)
			if b.N < n {
				return styleResult{detail: fmt.Sprintf("%d of %d converged", b.N, n)}
			}
			r := styleResult{ok: true, detail: fmt.Sprintf("%d converged in %s (%.1f/s)", n, secs(b.Took()), b.PerSecond())}
			if mn := a.Dur("min"); mn > 0 && b.Took() < mn {
				r.ok, r.final = false, true
				r.detail += fmt.Sprintf(", sooner than %s", mn)
			}
			if mx := a.Dur("max"); mx > 0 && b.Took() > mx {
				r.ok, r.final = false, true
				r.detail += fmt.Sprintf(", later than %s", mx)
			}
			if other := a.Str("faster_than"); other != "" {
				ob := v.Sets[SetKey{st, other}]
				switch {
				case ob.N == 0:
					// Not seen here (the student began at this step): nothing
					// to compare with.
					r.detail += fmt.Sprintf("; %s not timed in this session", other)
				case b.Took() >= ob.Took():
					r.ok, r.final = false, true
					r.detail += fmt.Sprintf(", not faster than %s (%s)", other, secs(ob.Took()))
				default:
					r.detail += fmt.Sprintf(", %s took %s", other, secs(ob.Took()))
				}
			}
			return r
		},
		words: func(s say, a Args) string {
			n, _ := a.Int("count")
			took, than := "", ""
			switch mn, mx := a.Dur("min"), a.Dur("max"); {
			case mn > 0 && mx > 0:
				took = s.f(", from the first created to the last converged in %s to %s", mn, mx)
			case mn > 0:
				took = s.f(", from the first created to the last converged in %s or more", mn)
			case mx > 0:
				took = s.f(", from the first created to the last converged within %s", mx)
			}
			if other := a.Str("faster_than"); other != "" {
				than = s.f(", sooner than the Echoes %s-* did", other)
			}
			return s.f("all %d Echoes %s converge after their creation%s%s", n, setNames(a.Str("prefix"), n), took, than)
		},
	},

	// No Echo of a set is left, and none of their Deployments.
	"echoes_absent": {
		args: spec{required: argTypes{"style": tStyle, "prefix": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			ns, pre := nsView(v, st), a.Str("prefix")+"-"
			echoes, deps := 0, 0
			for name, e := range ns.Echoes {
				if strings.HasPrefix(name, pre) {
					echoes++
				}
				if e.Deployment != nil && strings.HasPrefix(e.Deployment.Name, echo.DeploymentName(pre)) {
					deps++
				}
			}
			for _, d := range ns.Orphans {
				if strings.HasPrefix(d.Name, echo.DeploymentName(pre)) {
					deps++
				}
			}
			return styleResult{ok: echoes == 0 && deps == 0, detail: fmt.Sprintf("%d Echoes and %d Deployments left", echoes, deps)}
		},
		words: func(s say, a Args) string {
			return s.f("no Echo %s-* is left, nor its Deployment", a.Str("prefix"))
		},
	},

	// Its Deployment asks for replicas (and, with ready, has them ready).
	"deployment_replicas": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "replicas": tInt}, optional: argTypes{"ready": tBool}},
		eval: func(a Args, v View, st style.Style) styleResult {
			d := deploymentOf(v, st, a.Str("name"))
			if d == nil {
				return styleResult{detail: "no Deployment " + echo.DeploymentName(a.Str("name"))}
			}
			n, _ := a.Int("replicas")
			ok := int(d.Replicas) == n && (!a.Bool("ready") || int(d.ReadyReplicas) == n)
			return styleResult{ok: ok, detail: fmt.Sprintf("replicas %d, %d ready", d.Replicas, d.ReadyReplicas)}
		},
		words: func(s say, a Args) string {
			n, _ := a.Int("replicas")
			if a.Bool("ready") {
				return s.f("Deployment %s asks for %d replicas, all ready", echo.DeploymentName(a.Str("name")), n)
			}
			return s.f("Deployment %s asks for %d replicas", echo.DeploymentName(a.Str("name")), n)
		},
	},

	// Its Deployment is gone.
	"deployment_absent": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			if d := deploymentOf(v, st, a.Str("name")); d != nil {
				return styleResult{detail: d.Name + " still there"}
			}
			return styleResult{ok: true, detail: "gone"}
		},
		words: func(s say, a Args) string { return s.f("Deployment %s is gone", echo.DeploymentName(a.Str("name"))) },
	},

	// Its Deployment is controlled by Echo name.
	"owned": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			d := deploymentOf(v, st, a.Str("name"))
			if d == nil {
				return styleResult{detail: "no Deployment"}
			}
			return styleResult{ok: d.Owner == trace.Object(echov1.Kind, a.Str("name")), detail: fmt.Sprintf("controller %q", d.Owner)}
		},
		words: func(s say, a Args) string {
			return s.f("Deployment %s is controlled by Echo %s", echo.DeploymentName(a.Str("name")), a.Str("name"))
		},
	},

	// Its Deployment is still there with no controller owner.
	"orphaned": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
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
		words: func(s say, a Args) string {
			return s.f("Deployment %s is left running with no owner", echo.DeploymentName(a.Str("name")))
		},
	},

	// The world saw the Echo converge after the action (latency in the detail).
	"converged": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			e, missing := echoOf(a, v, st)
			if e == nil {
				return missing
			}
			// Only the Echo as it is now: an earlier edit may converge late.
			evs := eventsOf(v, st, trace.Converged, func(ev trace.Event) bool {
				g := trace.As[trace.Convergence](ev).Generation
				return trace.As[trace.Convergence](ev).Echo == a.Str("name") && g == e.Generation
			})
			if len(evs) == 0 {
				return styleResult{detail: "not yet"}
			}
			return styleResult{ok: true, detail: "in " + msField(trace.As[trace.Convergence](evs[0]).LatencyMS)}
		},
		words: func(s say, a Args) string {
			return s.f("the Deployment and status of Echo %s catch up with its spec", a.Str("name"))
		},
	},

	// The first reconcile of Echo name after the action, per style: who
	// noticed the change first, and through what.
	"noticed": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			// From the edit as the world saw it: a student types the command
			// in another terminal, long after the step began, and a poll
			// before that noticed nothing.
			from := v.Acted
			e := nsView(v, st).Echoes[a.Str("name")]
			edited := e != nil && e.Edited.After(v.Began)
			switch {
			case edited && (from.IsZero() || !e.Edited.Before(from)):
				// From the edit as the world saw it; the world's watch may
				// see it a little after an operator's does.
				from = e.Edited.Add(-worldLag)
			case !edited && !v.Acted.After(v.Began):
				return styleResult{detail: "no edit yet"}
			}
			for _, e := range eventsOf(v, st, trace.ReconcileStart, func(e trace.Event) bool { return e.Object == trace.Object(echov1.Kind, a.Str("name")) }) {
				if e.Time.After(from) {
					why := trace.As[trace.Reconcile](e).Cause
					if ev := trace.As[trace.Reconcile](e).CauseEvent; ev != "" {
						why += ": " + ev
					}
					return styleResult{ok: true, detail: fmt.Sprintf("after %s (%s)", secs(e.Time.Sub(from)), why)}
				}
			}
			return styleResult{detail: "not yet"}
		},
		words: func(s say, a Args) string { return s.f("a reconcile of Echo %s after the edit", a.Str("name")) },
	},

	// The world saw a drift of the Deployment repaired.
	"drift_repaired": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}, optional: argTypes{"what": tString}},
		eval: func(a Args, v View, st style.Style) styleResult {
			evs := eventsOf(v, st, trace.DriftRepaired, func(e trace.Event) bool {
				return trace.As[trace.Drift](e).Echo == a.Str("name") && (a.Str("what") == "" || trace.As[trace.Drift](e).What == a.Str("what"))
			})
			if len(evs) == 0 {
				return styleResult{detail: "not repaired"}
			}
			return styleResult{ok: true, detail: trace.As[trace.Drift](evs[0]).What + " repaired in " + msField(trace.As[trace.Drift](evs[0]).LatencyMS)}
		},
		words: func(s say, a Args) string {
			if what := a.Str("what"); what != "" {
				return s.f("the operator repairs the %s of Deployment %s", what, echo.DeploymentName(a.Str("name")))
			}
			return s.f("the operator repairs the drift of Deployment %s", echo.DeploymentName(a.Str("name")))
		},
	},

	// The garbage collector removed the Echo's Deployment.
	"gc_collected": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			obj := trace.Object("Deployment", echo.DeploymentName(a.Str("name")))
			evs := eventsOf(v, st, trace.GCCollected, func(e trace.Event) bool { return e.Object == obj })
			if len(evs) == 0 {
				return styleResult{detail: "not collected"}
			}
			pods := len(eventsOf(v, st, trace.GCCollected, func(e trace.Event) bool { return strings.HasPrefix(e.Object, "Pod/") }))
			// From the Echo's delete as the world saw it, else the act.
			from := v.Acted
			if del := eventsOf(v, st, trace.EchoDeleting, func(e trace.Event) bool {
				return e.Object == trace.Object(echov1.Kind, a.Str("name"))
			}); len(del) > 0 {
				from = del[0].Time
			}
			return styleResult{ok: true, detail: fmt.Sprintf("collected %s after %s (and %d pods)", obj, secs(evs[0].Time.Sub(from)), pods)}
		},
		words: func(s say, a Args) string {
			return s.f("the garbage collector removes Deployment %s", echo.DeploymentName(a.Str("name")))
		},
	},

	// Someone other than the holder at the step's start took the Lease after
	// the act that stopped the leader (its kill, its release, rlab's
	// partition), at least min and at most max after it.
	"new_leader": {
		args: spec{required: argTypes{"style": tGoStyle}, optional: argTypes{"min": tDuration, "max": tDuration}},
		eval: func(a Args, v View, st style.Style) styleResult {
			old := v.Holders[st]
			if old == "" {
				// Nobody led when the step was shown: the first election
				// is not a takeover.
				return styleResult{detail: "nobody led when the step began"}
			}
			from := v.Acts.at(st)
			if from.IsZero() {
				from = v.Acted
			}
			var took *trace.Event
			prev := old
			for _, e := range eventsOf(v, st, trace.LeaderObserved, func(e trace.Event) bool {
				return e.Source == trace.SourceWorld && trace.As[trace.Leader](e).Identity != ""
			}) {
				id := trace.As[trace.Leader](e).Identity
				if id != prev && !e.Time.Before(from) {
					took = &e
					break
				}
				prev = id
			}
			if took == nil {
				return styleResult{detail: "still " + prev}
			}
			d := took.Time.Sub(from)
			r := styleResult{ok: true, detail: fmt.Sprintf("%s took over from %s after %s", trace.As[trace.Leader](*took).Identity, prev, secs(d))}
			if mn := a.Dur("min"); mn > 0 {
				// A standby takes a Lease nobody renews only once it has
				// seen no renewal for the lease duration: counted from the
				// old leader's last renewal, which may come well before the
				// act when renewals lag.
				since := d
				if _, r, _, ok := style.ParseIdentity(prev); ok {
					// Its replica may renew later as a new process (leading
					// again): only a renewal before the takeover is its last.
					if t := v.Renewed[st.Source(r)]; !t.IsZero() && t.Before(took.Time) {
						since = took.Time.Sub(t)
					}
				}
				r.detail += fmt.Sprintf(" (%s after its last renewal)", secs(since))
				if since < mn {
					r.ok, r.final = false, true
					r.detail += fmt.Sprintf(", sooner than %s", mn)
				}
			}
			if mx := a.Dur("max"); mx > 0 && d > mx {
				r.ok, r.final = false, true
				r.detail += fmt.Sprintf(", later than %s", mx)
			}
			return r
		},
		words: func(s say, a Args) string {
			switch mn, mx := a.Dur("min"), a.Dur("max"); {
			case mn > 0 && mx > 0:
				return s.f("another replica takes the Lease, not before %s after the old leader's last renewal, within %s of the leader stopping", mn, mx)
			case mn > 0:
				return s.f("another replica takes the Lease, not before %s after the old leader's last renewal of the leader stopping", mn)
			case mx > 0:
				return s.f("another replica takes the Lease, within %s of the leader stopping", mx)
			}
			return s.f("another replica takes the Lease")
		},
	},

	// A replica lost the Lease (not released it).
	"leader_lost": {
		args: spec{required: argTypes{"style": tGoStyle}},
		eval: func(a Args, v View, st style.Style) styleResult {
			evs := eventsOf(v, st, trace.LeaderLost, func(e trace.Event) bool { return trace.As[trace.Leader](e).Reason == trace.ReasonLost })
			if len(evs) == 0 {
				return styleResult{detail: "nobody lost the Lease"}
			}
			return styleResult{ok: true, detail: fmt.Sprintf("%s lost it after %s", evs[0].Source, secs(evs[0].Time.Sub(v.Acts.at(st))))}
		},
		words: func(s say, _ Args) string { return s.f("the leader loses the Lease") },
	},

	// Every standby is trying for the Lease: since the step began (or its
	// act), each replica not holding it has read it, as the election's next
	// try does every RetryPeriod. A replica restarted a moment ago runs
	// before it campaigns; a takeover timed from the next act assumes a
	// standby that is trying.
	"campaigning": {
		args: spec{required: argTypes{"style": tGoStyle}},
		eval: func(a Args, v View, st style.Style) styleResult {
			leader := ""
			if l := nsView(v, st).Lease; l != nil {
				_, leader, _, _ = style.ParseIdentity(l.Holder)
			}
			var idle []string
			n := 0
			for _, r := range v.Replicas {
				if r.Style != st || r.Replica == leader {
					continue
				}
				n++
				if !slices.ContainsFunc(v.kind(trace.APIRequest), func(e trace.Event) bool {
					return e.Source == "proxy/"+st.Source(r.Replica) && e.IsLease() && !e.Time.Before(v.Acted)
				}) {
					idle = append(idle, st.Source(r.Replica))
				}
			}
			switch {
			case n == 0:
				return styleResult{detail: "no standby"}
			case len(idle) > 0:
				return styleResult{detail: "not asked for the Lease yet: " + strings.Join(idle, ", ")}
			}
			return styleResult{ok: true, detail: fmt.Sprintf("%d standby trying for the Lease", n)}
		},
		words: func(s say, _ Args) string { return s.f("every standby tries for the Lease") },
	},

	// Every replica of a Go style reported, since the step began, the
	// client-side rate limit its library set (client.limits, as a pane's
	// API line shows it): qps requests a second (-1: none) and, if given,
	// burst.
	"client_limit": {
		args: spec{required: argTypes{"style": tGoStyle, "qps": tQPS}, optional: argTypes{"burst": tInt}},
		eval: func(a Args, v View, st style.Style) styleResult {
			said := map[string]string{}
			for _, e := range eventsOf(v, st, trace.ClientLimits, nil) {
				q := trace.As[trace.Limits](e).QPS
				b := trace.As[trace.Limits](e).Burst
				said[e.Source] = limitWords(q, int(b))
				if q != float64(a.QPS("qps")) && !(q < 0 && a.QPS("qps") < 0) {
					continue
				}
				if want, ok := a.Int("burst"); ok && int(b) != want {
					continue
				}
				said[e.Source] = "ok"
			}
			var wrong []string
			n := 0
			for _, r := range v.Replicas {
				if r.Style != st {
					continue
				}
				n++
				switch got := said[r.Name]; got {
				case "ok":
				case "":
					wrong = append(wrong, r.Name+" not reported since")
				default:
					wrong = append(wrong, r.Name+" "+got)
				}
			}
			switch {
			case n == 0:
				return styleResult{detail: "no replica"}
			case len(wrong) > 0:
				return styleResult{detail: strings.Join(wrong, ", ")}
			}
			return styleResult{ok: true, detail: fmt.Sprintf("%d of %d report it", n, n)}
		},
		words: func(s say, a Args) string {
			// As limitWords says it, a sentence for each of its shapes.
			qps := float64(a.QPS("qps"))
			b, hasBurst := a.Int("burst")
			switch q := strconv.FormatFloat(qps, 'f', -1, 64); {
			case qps < 0:
				return s.f("every replica reports the client limit none")
			case hasBurst && b >= 0:
				return s.f("every replica reports the client limit %s/s burst %d", q, b)
			default:
				return s.f("every replica reports the client limit %s/s", q)
			}
		},
	},

	// Every replica runs.
	"replicas_running": {
		args: spec{required: argTypes{"style": tStyle}},
		eval: func(a Args, v View, st style.Style) styleResult {
			n, running := replicasOf(v, st, func(r supervisor.Status) bool { return r.Running })
			return styleResult{ok: n > 0 && running == n, detail: fmt.Sprintf("%d of %d running", running, n)}
		},
		words: func(s say, _ Args) string { return s.f("every replica runs") },
	},

	// Every replica reaches the apiserver as it should: no partition, no
	// slowdown of rlab's (rlab do heal, rlab do slow STYLE 0s).
	"connected": {
		args: spec{required: argTypes{"style": tStyle}},
		eval: func(a Args, v View, st style.Style) styleResult {
			var cut []string
			n := 0
			for _, r := range v.Replicas {
				if r.Style != st {
					continue
				}
				n++
				if c := v.Cut[r.Name]; c != "" {
					cut = append(cut, r.Name+" "+c)
				}
			}
			if len(cut) > 0 {
				return styleResult{detail: strings.Join(cut, ", ")}
			}
			return styleResult{ok: n > 0, detail: fmt.Sprintf("%d of %d connected", n, n)}
		},
		words: func(s say, _ Args) string {
			return s.f("every replica reaches the apiserver, no partition, slowdown or fault")
		},
	},

	// Every replica is frozen (SIGSTOP).
	"replicas_paused": {
		args: spec{required: argTypes{"style": tStyle}},
		eval: func(a Args, v View, st style.Style) styleResult {
			n, paused := replicasOf(v, st, func(r supervisor.Status) bool { return r.Running && r.Paused })
			return styleResult{ok: n > 0 && paused == n, detail: fmt.Sprintf("%d of %d frozen", paused, n)}
		},
		words: func(s say, _ Args) string { return s.f("every replica is frozen") },
	},

	// Every replica was restarted since the step began and the leader (any
	// replica, for the shell loop) has reconciled since.
	"restarted": {
		args: spec{required: argTypes{"style": tStyle}},
		eval: func(a Args, v View, st style.Style) styleResult {
			started := map[string]time.Time{}
			for _, e := range v.kind(trace.ProcessStart) {
				if style.FromSource(e.Object) == st {
					started[e.Object] = e.Time
				}
			}
			if n, _ := replicasOf(v, st, func(supervisor.Status) bool { return true }); len(started) < n {
				return styleResult{detail: fmt.Sprintf("%d of %d replicas restarted", len(started), n)}
			}
			holder := ""
			if l := nsView(v, st).Lease; l != nil {
				holder = l.Holder
			}
			// The Lease holder's identity names the leading replica, and it
			// must have reconciled since its restart.
			leads := func(name string) bool {
				s, replica, _, ok := style.ParseIdentity(holder)
				return ok && s.Source(replica) == name
			}
			for name, at := range started {
				if st.Traits().ElectsLeader && !leads(name) {
					continue
				}
				for _, e := range v.kind(trace.ReconcileEnd) {
					if e.Source == name && e.Time.After(at) {
						if !st.Traits().ElectsLeader {
							return styleResult{ok: true, detail: "restarted and has reconciled"}
						}
						return styleResult{ok: true, detail: "restarted; " + name + " leads and has reconciled"}
					}
				}
				return styleResult{detail: name + " leads, no reconcile yet"}
			}
			return styleResult{detail: fmt.Sprintf("restarted; no restarted replica leads yet (holder %q)", holder)}
		},
		words: func(s say, _ Args) string { return s.f("every replica restarted and the leader reconciled") },
	},

	// The student's own requests (through the proxy `rlab env` hands out,
	// or made for them by a key, autoplay or `rlab do`) since the step was
	// shown: what only the apiserver answers (a refusal, a conflict, a
	// review of the student's rights) is seen here, and nowhere else.
	"you_asked": {
		args: spec{optional: argTypes{"verbs": tStrings, "resource": tString, "code": tInt, "min": tInt}},
		eval: func(a Args, v View, _ style.Style) styleResult {
			n, other := 0, 0
			for _, e := range v.kind(trace.APIRequest) {
				if e.Source != trace.SourceYou {
					continue
				}
				switch asked, answered := requestIs(a, e); {
				case asked && answered:
					n++
				case asked:
					other++
				}
			}
			mn, has := a.Int("min")
			if !has {
				mn = 1
			}
			detail := fmt.Sprintf("%d request%s of yours", n, plural(n))
			if other > 0 {
				detail += fmt.Sprintf(" (%d more answered otherwise)", other)
			}
			return styleResult{ok: n >= mn, detail: detail}
		},
		words: func(s say, a Args) string {
			on, answered := s.request(a)
			what := s.f("a request%s%s", on, answered)
			if v := a.List("verbs"); len(v) > 0 {
				what = s.f("a %s request%s%s", strings.Join(v, "/"), on, answered)
			}
			if mn, ok := a.Int("min"); ok && mn > 1 {
				what = s.f("%d× %s", mn, what)
			}
			return s.f("%s, through rlab env's kubeconfig", what)
		},
	},

	// A standby's watches of Echoes: WATCH requests since the act (or over
	// the first `over` of it) by a replica that was not leading then.
	// controller-runtime starts a controller's sources once it leads, unless
	// warm-up (EnableWarmup) starts them at once, before the election.
	"standby_watches": {
		args: spec{required: argTypes{"style": tStyle}, optional: argTypes{"min": tInt, "max": tInt, "over": tDuration}},
		eval: func(a Args, v View, st style.Style) styleResult {
			over := a.Dur("over")
			if over > 0 && v.Now.Sub(v.Acted) < over {
				return styleResult{detail: "measuring for " + secs(over)}
			}
			watches := map[string]int{}
			for _, e := range v.kind(trace.APIRequest) {
				replica := strings.TrimPrefix(e.Source, "proxy/")
				switch {
				case e.Style() != st, e.Time.Before(v.Acted),
					over > 0 && e.Time.After(v.Acted.Add(over)),
					e.Verb() != trace.VerbWatch || e.Resource() != "echoes",
					leading(v, replica, e.Time):
					continue
				}
				watches[replica]++
			}
			n := 0
			var parts []string
			for _, r := range slices.Sorted(maps.Keys(watches)) {
				n += watches[r]
				parts = append(parts, fmt.Sprintf("%s %d", r, watches[r]))
			}
			ok, want := bounds(a, n)
			detail := fmt.Sprintf("%d watch%s of echoes by a standby%s", n, map[bool]string{true: "", false: "es"}[n == 1], want)
			if len(parts) > 0 {
				detail += " (" + strings.Join(parts, ", ") + ")"
			}
			return styleResult{ok: ok, detail: detail}
		},
		words: func(s say, a Args) string {
			return s.f("a standby's watches of Echoes%s%s", s.over(a), s.want(a))
		},
	},

	// API requests through the style's proxies, counted since the step
	// began (or over the first `over` of it).
	"api_requests": {
		args: spec{required: argTypes{"style": tStyle},
			optional: argTypes{"verbs": tStrings, "resource": tString, "code": tInt, "min": tInt, "max": tInt, "over": tDuration}},
		eval: func(a Args, v View, st style.Style) styleResult {
			over := a.Dur("over")
			if over > 0 && v.Now.Sub(v.Acted) < over {
				return styleResult{detail: "measuring for " + secs(over)}
			}
			code, hasCode := a.Int("code")
			n := 0
			for _, e := range v.kind(trace.APIRequest) { // only proxies make them
				if e.Style() != st {
					continue
				}
				if over > 0 && (e.Time.Before(v.Acted) || e.Time.After(v.Acted.Add(over))) {
					continue
				}
				if asked, answered := requestIs(a, e); asked && answered {
					n++
				}
			}
			ok, want := bounds(a, n)
			what := strings.Join(a.List("verbs"), "/")
			if r := a.Str("resource"); r != "" {
				what = strings.TrimSpace(what + " " + r)
			}
			if what == "" {
				what = "requests"
			}
			if hasCode {
				what += fmt.Sprintf(" → %d", code)
			}
			in := ""
			if over > 0 {
				in = " in " + secs(over)
			}
			return styleResult{ok: ok, detail: fmt.Sprintf("%d %s%s%s", n, what, in, want)}
		},
		words: func(s say, a Args) string {
			on, answered := s.request(a)
			if v := a.List("verbs"); len(v) > 0 {
				return s.f("%s requests%s%s%s%s", strings.Join(v, "/"), on, answered, s.over(a), s.want(a))
			}
			return s.f("API requests%s%s%s%s", on, answered, s.over(a), s.want(a))
		},
	},

	// Requests and watch events the fault of a kind touched at the style's
	// proxies since the step began (fault.injected): it was on, and met
	// the traffic it is for.
	"faults_injected": {
		args: spec{required: argTypes{"style": tStyle, "fault": tFaultKind}, optional: argTypes{"min": tInt, "max": tInt}},
		eval: func(a Args, v View, st style.Style) styleResult {
			n := len(eventsOf(v, st, trace.FaultInjected, func(e trace.Event) bool { return trace.As[trace.Injection](e).Fault == a.Str("fault") }))
			ok, want := bounds(a, n)
			return styleResult{ok: ok, detail: fmt.Sprintf("%d touched by the %s fault%s", n, a.Str("fault"), want)}
		},
		words: func(s say, a Args) string {
			return s.f("requests or watch events touched by the %s fault%s", a.Str("fault"), s.want(a))
		},
	},

	// Informer updates of Echo name (resource Echo), its Deployment
	// (resource Deployment) or ConfigMap name (resource ConfigMap) since
	// the step began, of one change (spec: the generation moved; status: it
	// did not), let through to the queue or, with filtered: true, stopped
	// by a predicate; with event: add or delete, those events instead.
	"informer_updates": {
		args: spec{required: argTypes{"style": tGoStyle, "resource": tResource, "name": tName},
			optional: argTypes{"change": tChange, "filtered": tBool, "min": tInt, "max": tInt, "event": tEvent}},
		eval: func(a Args, v View, st style.Style) styleResult {
			obj := trace.Object(a.Str("resource"), a.Str("name"))
			if a.Str("resource") == "Deployment" {
				obj = trace.Object(a.Str("resource"), echo.DeploymentName(a.Str("name")))
			}
			kind := map[string]trace.Kind{"": trace.InformerUpdate, "update": trace.InformerUpdate,
				"add": trace.InformerAdd, "delete": trace.InformerDelete}[a.Str("event")]
			evs := eventsOf(v, st, kind, func(e trace.Event) bool {
				return e.Object == obj && (a.Str("change") == "" || trace.As[trace.Informer](e).Change == a.Str("change")) &&
					trace.As[trace.Informer](e).Filtered == a.Bool("filtered")
			})
			ok, want := bounds(a, len(evs))
			return styleResult{ok: ok, detail: fmt.Sprintf("%d%s", len(evs), want)}
		},
		words: func(s say, a Args) string {
			// The event (tEvent: add, update or delete) and the change
			// (tChange: spec or status), each of its own words.
			var what string
			switch ev, c := a.Str("event"), a.Str("change"); {
			case ev == "add" && c != "":
				what = s.f("%s adds", c)
			case ev == "add":
				what = s.f("adds")
			case ev == "delete" && c != "":
				what = s.f("%s deletes", c)
			case ev == "delete":
				what = s.f("deletes")
			case c != "":
				what = s.f("%s updates", c)
			default:
				what = s.f("updates")
			}
			obj := a.Str("resource") + " " + a.Str("name")
			if a.Str("resource") == "Deployment" {
				obj = "Deployment " + echo.DeploymentName(a.Str("name"))
			}
			if a.Bool("filtered") {
				return s.f("%s of %s filtered out by a predicate%s", what, obj, s.want(a))
			}
			return s.f("%s of %s let through to the queue%s", what, obj, s.want(a))
		},
	},

	// Reconciles of Echo name since the step began; with cause, only those
	// whose first cause names it (e.g. ConfigMap/echo-defaults).
	"reconciles_after_edit": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}, optional: argTypes{"min": tInt, "max": tInt, "cause": tString}},
		eval: func(a Args, v View, st style.Style) styleResult {
			evs := eventsOf(v, st, trace.ReconcileStart, func(e trace.Event) bool {
				return e.Object == trace.Object(echov1.Kind, a.Str("name")) && strings.Contains(trace.As[trace.Reconcile](e).CauseEvent, a.Str("cause"))
			})
			ok, want := bounds(a, len(evs))
			return styleResult{ok: ok, detail: fmt.Sprintf("%d reconciles%s", len(evs), want)}
		},
		words: func(s say, a Args) string {
			if c := a.Str("cause"); c != "" {
				return s.f("reconciles of Echo %s caused by %s%s", a.Str("name"), c, s.want(a))
			}
			return s.f("reconciles of Echo %s%s", a.Str("name"), s.want(a))
		},
	},

	// Some reconcile answered several queued events at once.
	"coalesced": {
		args: spec{required: argTypes{"style": tGoStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			obj := trace.Object(echov1.Kind, a.Str("name"))
			informed := len(eventsOf(v, st, trace.InformerUpdate, func(e trace.Event) bool { return e.Object == obj }))
			starts := eventsOf(v, st, trace.ReconcileStart, func(e trace.Event) bool { return e.Object == obj })
			most := 0
			for _, e := range starts {
				if n := trace.As[trace.Reconcile](e).Causes; n > most {
					most = int(n)
				}
			}
			return styleResult{ok: most >= 2, detail: fmt.Sprintf("%d Echo updates → %d reconciles, one answered %d at once", informed, len(starts), most)}
		},
		words: func(s say, a Args) string {
			return s.f("one reconcile answers several queued events for Echo %s", a.Str("name"))
		},
	},

	// Failed reconciles were retried at least min times, each after a
	// longer backoff.
	"retries": {
		args: spec{required: argTypes{"style": tGoStyle, "name": tName, "min": tInt}},
		eval: func(a Args, v View, st style.Style) styleResult {
			obj := trace.Object(echov1.Kind, a.Str("name"))
			evs := eventsOf(v, st, trace.QueueRequeue, func(e trace.Event) bool {
				return e.Object == obj && trace.As[trace.Queue](e).Reason == trace.ReasonError
			})
			var backoffs []string
			growing := true
			prev := -1.0
			for _, e := range evs {
				ms := trace.As[trace.Queue](e).AfterMS
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
		words: func(s say, a Args) string {
			n, _ := a.Int("min")
			return s.f("at least %d retries of Echo %s, each after a longer backoff", n, a.Str("name"))
		},
	},

	// The world saw the Deployment's message drift from the Echo's and be
	// put back at least min times: two writers undoing each other.
	"flapping": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "min": tInt}},
		eval: func(a Args, v View, st style.Style) styleResult {
			n := len(eventsOf(v, st, trace.DriftRepaired, func(e trace.Event) bool {
				return trace.As[trace.Drift](e).Echo == a.Str("name") && trace.As[trace.Drift](e).What == trace.DriftMessage
			}))
			mn, _ := a.Int("min")
			return styleResult{ok: n >= mn, detail: fmt.Sprintf("message changed and put back %d times (want ≥%d)", n, mn)}
		},
		words: func(s say, a Args) string {
			n, _ := a.Int("min")
			return s.f("the message of Deployment %s changed and put back at least %d times", echo.DeploymentName(a.Str("name")), n)
		},
	},

	// The Deployment carries the Echo's message.
	"deployment_message": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}, optional: argTypes{"message": tString}},
		eval: func(a Args, v View, st style.Style) styleResult {
			e := nsView(v, st).Echoes[a.Str("name")]
			d := deploymentOf(v, st, a.Str("name"))
			if e == nil || d == nil {
				return styleResult{detail: "no Echo or no Deployment"}
			}
			// The message the Echo wants: its own, or the namespace's
			// default (echo-defaults) when it has none.
			want := e.Wants
			if m, ok := a["message"].(string); ok {
				want = m
			}
			return styleResult{ok: d.Message == e.Wants && d.Message == want, detail: fmt.Sprintf("Deployment says %q, Echo wants %q", d.Message, e.Wants)}
		},
		words: func(s say, a Args) string {
			if _, ok := a["message"]; ok {
				return s.f("Deployment %s carries the message %q, which Echo %s wants", echo.DeploymentName(a.Str("name")), a.Str("message"), a.Str("name"))
			}
			return s.f("Deployment %s carries Echo %s's message", echo.DeploymentName(a.Str("name")), a.Str("name"))
		},
	},

	// The Echo carries the operators' finalizer.
	"has_finalizer": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			e, missing := echoOf(a, v, st)
			if e == nil {
				return missing
			}
			return styleResult{ok: echo.HasFinalizer(e.Finalizers), detail: fmt.Sprintf("finalizers %v", e.Finalizers)}
		},
		words: func(s say, a Args) string {
			return s.f("Echo %s carries the finalizer %s", a.Str("name"), echo.Finalizer)
		},
	},

	// The registry ConfigMap lists the Echo under its current uid.
	"registered": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
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
		words: func(s say, a Args) string {
			return s.f("ConfigMap %s lists Echo %s", echo.RegistryName, a.Str("name"))
		},
	},

	// The registry ConfigMap does not list the Echo.
	"unregistered": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			if uid, ok := nsView(v, st).Registry[a.Str("name")]; ok {
				return styleResult{detail: fmt.Sprintf("%s still lists %s (uid %s)", echo.RegistryName, a.Str("name"), uid)}
			}
			return styleResult{ok: true, detail: "not listed"}
		},
		words: func(s say, a Args) string {
			return s.f("ConfigMap %s no longer lists Echo %s", echo.RegistryName, a.Str("name"))
		},
	},

	// The Echo is being deleted and a finalizer still holds it.
	"echo_deleting": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			e := nsView(v, st).Echoes[a.Str("name")]
			switch {
			case e == nil:
				return styleResult{detail: "gone"}
			case !e.Deleting:
				return styleResult{detail: "not being deleted"}
			}
			return styleResult{ok: len(e.Finalizers) > 0, detail: fmt.Sprintf("being deleted, held by %v", e.Finalizers)}
		},
		words: func(s say, a Args) string {
			return s.f("Echo %s is being deleted, held by a finalizer", a.Str("name"))
		},
	},

	// An operator cleaned up after the deleted Echo, removed its finalizer,
	// and the Echo is gone.
	"finalized": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		eval: func(a Args, v View, st style.Style) styleResult {
			obj := trace.Object(echov1.Kind, a.Str("name"))
			removed := eventsOf(v, st, trace.Finalizer, func(e trace.Event) bool {
				return e.Object == obj && trace.As[trace.FinalizerChange](e).Action == trace.FinalizerRemoved
			})
			who := ""
			if len(removed) > 0 {
				who = removed[0].Source
			} else if w := finalizerWrites(v, st, obj); len(w) > 0 {
				// A replica that loses its Lease as it wakes stops at once
				// (controller-runtime skips the graceful shutdown then), and
				// the trace line of a write it just made can go with it; its
				// proxy saw the write all the same. Once an Echo is being
				// deleted, a write to it (not to its status) is the removal
				// of a finalizer.
				who = fmt.Sprintf("%s (its proxy saw %s echoes → %d)", w[0].Source, w[0].Verb(), w[0].Code())
			}
			gone := eventsOf(v, st, trace.EchoDeleted, func(e trace.Event) bool { return e.Object == obj })
			switch {
			case who == "":
				return styleResult{detail: "no cleanup yet"}
			case len(gone) == 0:
				return styleResult{detail: who + " cleaned up; the Echo is not gone yet"}
			}
			return styleResult{ok: true, detail: fmt.Sprintf("%s cleaned up; gone after waiting %s", who, msField(trace.As[trace.Deleted](gone[0]).WaitedMS))}
		},
		words: func(s say, a Args) string {
			return s.f("the operator cleans up after Echo %s and it goes", a.Str("name"))
		},
	},
}

// finalizerWrites are the requests of style st's replicas (not the
// student's), seen by their proxies since the step began, that updated or
// patched Echo obj itself (not its status) and succeeded.
func finalizerWrites(v View, st style.Style, obj string) []trace.Event {
	return eventsOf(v, st, trace.APIRequest, func(e trace.Event) bool {
		return e.Style() == st && e.Object == obj && e.Resource() == "echoes" && (e.Verb() == "update" || e.Verb() == "patch") && e.Code() == 200
	})
}

// limitWords says a client-side limit as a pane does: "5/s burst 10",
// "none"; a burst below 0 is not said.
func limitWords(qps float64, burst int) string {
	if qps < 0 {
		return "none"
	}
	s := strconv.FormatFloat(qps, 'f', -1, 64) + "/s"
	if burst >= 0 {
		s += " burst " + strconv.Itoa(burst)
	}
	return s
}

// setBatch is the Echoes prefix-001 … prefix-<n> whose creation converged
// since the step began, each once (its first report), as one batch.
func setBatch(v View, st style.Style, prefix string, n int) world.Batch {
	var b world.Batch
	seen := map[string]bool{}
	for _, e := range eventsOf(v, st, trace.Converged, nil) {
		name := trace.As[trace.Convergence](e).Echo
		created, ok := world.CreationConverged(e)
		if !ok || seen[name] || !inSet(name, prefix, n) {
			continue
		}
		seen[name] = true
		b.Add(created, e.Time)
	}
	return b
}

// inSet says whether name is one of the Echoes prefix-001 … prefix-<n>.
func inSet(name, prefix string, n int) bool {
	i, err := strconv.Atoi(strings.TrimPrefix(name, prefix+"-"))
	return err == nil && i >= 1 && i <= n && sandbox.SetName(prefix, i) == name
}

// leadSlack is how long after a request its replica's own LeaderAcquired
// may come and still count as leading when it asked: a new leader starts
// its watches at once, and the two events race to the trace.
const leadSlack = 2 * time.Second

// leading says whether replica ("runtime/a") was leading at t, as the
// step's events tell: it acquired the Lease before t (or within leadSlack
// after it) and had neither lost it nor exited since.
func leading(v View, replica string, t time.Time) bool {
	var acquired time.Time
	for _, e := range v.kind(trace.LeaderAcquired) {
		if e.Source == replica && !e.Time.After(t.Add(leadSlack)) && e.Time.After(acquired) {
			acquired = e.Time
		}
	}
	if acquired.IsZero() {
		return false
	}
	for _, e := range v.kind(trace.LeaderLost) {
		if e.Source == replica && e.Time.After(acquired) && e.Time.Before(t) {
			return false
		}
	}
	for _, e := range v.kind(trace.ProcessExit) {
		if e.Object == replica && e.Time.After(acquired) && e.Time.Before(t) {
			return false
		}
	}
	return true
}

// requestIs says whether API request e is of the verbs and resource a
// names (asked), and answered with the code it names, if any.
func requestIs(a Args, e trace.Event) (asked, answered bool) {
	if vs := a.List("verbs"); len(vs) > 0 && !slices.Contains(vs, e.Verb()) {
		return false, false
	}
	if r := a.Str("resource"); r != "" && e.Resource() != r {
		return false, false
	}
	code, hasCode := a.Int("code")
	return true, !hasCode || e.Code() == code
}

// request says the resource and the code a request is asked for, for a
// sentence: " on echoes", " answered 403", each "" when not given.
func (s say) request(a Args) (on, answered string) {
	if r := a.Str("resource"); r != "" {
		on = s.f(" on %s", r)
	}
	if c, ok := a.Int("code"); ok {
		answered = s.f(" answered %d", c)
	}
	return on, answered
}

// over says the over argument, for a sentence: "" when not given.
func (s say) over(a Args) string {
	if d := a.Dur("over"); d > 0 {
		return s.f(" over %s", d)
	}
	return ""
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
