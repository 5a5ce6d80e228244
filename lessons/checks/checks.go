package checks

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kkloud/rlab/lessons"
	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/ship"
	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/sim/world"
)

// checkKind is how a check a lesson can name is evaluated. Adding a check
// is adding an entry to checks, its arguments and words to lessons' (and a
// line to README.md).
type checkKind struct {
	// eval looks at v for one style of the style argument.
	eval func(a Args, v View, st style.Style) styleResult
}

// checks is the closed set of checks, over the world model and the trace
// events since the step began.
var checks = map[string]checkKind{
	// rlab check's checks (IDs of sim/feature/check) pass on the lesson's operator
	// in one run. The runs go on in the background while the step waits
	// (Player.grade); until one passes, the detail is the failing checks'
	// reasons, which the lesson panel shows.
	lessons.CondOperatorCheck: {
		eval: func(a Args, v View, st style.Style) styleResult {
			g, ok := v.Grades[GradeKey(a)]
			if !ok {
				return styleResult{detail: "not checked yet"}
			}
			return g.result(a.List("checks"))
		},
	},

	// go test passes the tests named in the project the student's
	// operator runs (and fails them without the garbage collector, or on
	// the lesson's broken version). The runs go on in the background
	// (Player.testLoop), as operator_check's.
	lessons.CondProjectTest: {
		eval: func(a Args, v View, st style.Style) styleResult {
			g, ok := v.Grades[ProjectTestKey(a)]
			if !ok {
				return styleResult{detail: "not run yet"}
			}
			return g.result(ProjectTestIDs(a))
		},
	},

	// The project's manifests are what its markers say (ship.CheckManifests),
	// read again every second in the background (Player.manifestsLoop).
	lessons.CondManifests: {
		eval: func(a Args, v View, st style.Style) styleResult {
			g, ok := v.Grades[ManifestsKey(a)]
			if !ok {
				return styleResult{detail: "not read yet"}
			}
			return g.result([]string{lessons.CondManifests})
		},
	},

	// A request of a pod of the operator's Deployment reached the
	// apiserver since the step began: its audit log says so.
	"shipped": {
		eval: func(a Args, v View, st style.Style) styleResult {
			op := a.Str("operator")
			prefix := ship.SourcePrefix + op + "/"
			for _, e := range v.kind(trace.APIRequest) {
				q, ok := e.Request()
				if ok && strings.HasPrefix(e.Source, prefix) && q.Code/100 == 2 {
					pod := strings.TrimPrefix(e.Source, prefix)
					return styleResult{ok: true, detail: fmt.Sprintf("replica %s, a pod of its Deployment: %s %s answered %d", pod, q.Verb, q.Resource, q.Code)}
				}
			}
			return styleResult{detail: "no request of a pod of " + op + "'s Deployment yet: rlab do ship " + op + " ships it"}
		},
	},

	// The shipped operator is back on this machine: its replicas run here
	// again, which rlab do unship starts once its pods are gone.
	"unshipped": {
		eval: func(a Args, v View, st style.Style) styleResult {
			n, running := replicasOf(v, style.Style(a.Str("operator")), func(r supervisor.Status) bool { return r.Running })
			return styleResult{ok: n > 0 && running == n, detail: fmt.Sprintf("%d of %d replicas running here", running, n)}
		},
	},

	// The Echo's status.ready reads ready.
	"echo_status": {
		eval: func(a Args, v View, st style.Style) styleResult {
			e, missing := echoOf(a, v, st)
			if e == nil {
				return missing
			}
			return styleResult{ok: e.Ready == a.Str("ready"), detail: fmt.Sprintf("ready %q", e.Ready)}
		},
	},

	// The Echo's status is about its current spec (status.observedGeneration
	// equals metadata.generation), or, with current: false, about an older
	// one.
	"status_current": {
		eval: func(a Args, v View, st style.Style) styleResult {
			e, missing := echoOf(a, v, st)
			if e == nil {
				return missing
			}
			current := e.StatusCurrent()
			return styleResult{ok: current == a.Bool("current"),
				detail: fmt.Sprintf("generation %d, status.observedGeneration %d, ready %q", e.Generation, e.ObservedGeneration, e.Ready)}
		},
	},

	// The Echo's status has condition type (Ready, Progressing) with
	// status (True, False or Unknown).
	"echo_condition": {
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
	},

	// Every pod the Echo asks for is ready, and its status.ready does not
	// say so: nothing brought the Echo back to the queue.
	"status_behind": {
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
	},

	// The field manager owns spec.replicas of the Echo's Deployment (alone,
	// or with others that applied the same value).
	"replicas_owner": {
		eval: func(a Args, v View, st style.Style) styleResult {
			d := deploymentOf(v, st, a.Str("name"))
			if d == nil {
				return styleResult{detail: "no Deployment"}
			}
			return styleResult{ok: slices.Contains(d.ReplicasOwners, a.Str("manager")),
				detail: "spec.replicas owned by " + strings.Join(d.ReplicasOwners, ", ")}
		},
	},

	// spec.replicas of the Echo's Deployment changed owners (field
	// managers) at least min times since the step began: writers taking it
	// from each other.
	"handovers": {
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
	},

	// The Echo is gone.
	"echo_absent": {
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
	},

	// Every Echo of a set (create_echoes) is there and reports ready n/n.
	"echoes_ready": {
		eval: func(a Args, v View, st style.Style) styleResult {
			n, _ := a.Int("count")
			ns, ready, moving := nsView(v, st), 0, 0
			for i := 1; i <= n; i++ {
				e := ns.Echoes[sandbox.SetName(a.Str("prefix"), i)]
				if e == nil || e.Ready == "" || e.Ready != fmt.Sprintf("%d/%d", e.Replicas, e.Replicas) {
					continue
				}
				ready++
				// Ready at its first status write (0/0 at once for an Echo
				// scaled to zero), the operator still owes the write that
				// says its Deployment is up to date, if it writes one.
				if e.Conditions[echo.ConditionProgressing] == string(metav1.ConditionTrue) {
					moving++
				}
			}
			r := styleResult{ok: ready == n && moving == 0, detail: fmt.Sprintf("%d of %d ready", ready, n)}
			if moving > 0 {
				r.detail += fmt.Sprintf(", %d of them still Progressing", moving)
			}
			return r
		},
	},

	// Every Echo of a set (create_echoes) converged after its creation
	// since the step began, as the world reported it: the set as one batch
	// (world.Batch, what a pane's batch line shows), timed from the first
	// created to the last converged, at least min and at most max, and in
	// less time than the set faster_than took in an earlier step, if it
	// was timed.
	"echoes_converged": {
		eval: func(a Args, v View, st style.Style) styleResult {
			n, _ := a.Int("count")
			b := setBatch(v, st, a.Str("prefix"), n)
			if b.N < n {
				return styleResult{detail: fmt.Sprintf("%d of %d converged", b.N, n)}
			}
			r := styleResult{ok: true, detail: fmt.Sprintf("%d converged in %s (%.1f/s)", n, Secs(b.Took()), b.PerSecond())}
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
					r.detail += fmt.Sprintf(", not faster than %s (%s)", other, Secs(ob.Took()))
				default:
					r.detail += fmt.Sprintf(", %s took %s", other, Secs(ob.Took()))
				}
			}
			return r
		},
	},

	// No Echo of a set is left, and none of their Deployments.
	"echoes_absent": {
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
	},

	// Its Deployment asks for replicas (and, with ready, has them ready).
	"deployment_replicas": {
		eval: func(a Args, v View, st style.Style) styleResult {
			d := deploymentOf(v, st, a.Str("name"))
			if d == nil {
				return styleResult{detail: "no Deployment " + echo.DeploymentName(a.Str("name"))}
			}
			n, _ := a.Int("replicas")
			ok := int(d.Replicas) == n && (!a.Bool("ready") || int(d.ReadyReplicas) == n)
			return styleResult{ok: ok, detail: fmt.Sprintf("replicas %d, %d ready", d.Replicas, d.ReadyReplicas)}
		},
	},

	// Its Deployment is gone.
	"deployment_absent": {
		eval: func(a Args, v View, st style.Style) styleResult {
			if d := deploymentOf(v, st, a.Str("name")); d != nil {
				return styleResult{detail: d.Name + " still there"}
			}
			return styleResult{ok: true, detail: "gone"}
		},
	},

	// Its Deployment is controlled by Echo name.
	"owned": {
		eval: func(a Args, v View, st style.Style) styleResult {
			d := deploymentOf(v, st, a.Str("name"))
			if d == nil {
				return styleResult{detail: "no Deployment"}
			}
			return styleResult{ok: d.Owner == trace.Object(echov1.Kind, a.Str("name")), detail: fmt.Sprintf("controller %q", d.Owner)}
		},
	},

	// Its Deployment is still there with no controller owner.
	"orphaned": {
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
	},

	// The world saw the Echo converge after the action (latency in the detail).
	"converged": {
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
	},

	// The first reconcile of Echo name after the action, per style: who
	// noticed the change first, and through what.
	"noticed": {
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
				from = e.Edited.Add(-WorldLag)
			case !edited && !v.Acted.After(v.Began):
				return styleResult{detail: "no edit yet"}
			}
			for _, e := range eventsOf(v, st, trace.ReconcileStart, func(e trace.Event) bool { return e.Object == trace.Object(echov1.Kind, a.Str("name")) }) {
				if e.Time.After(from) {
					why := trace.As[trace.Reconcile](e).Cause
					if ev := trace.As[trace.Reconcile](e).CauseEvent; ev != "" {
						why += ": " + ev
					}
					return styleResult{ok: true, detail: fmt.Sprintf("after %s (%s)", Secs(e.Time.Sub(from)), why)}
				}
			}
			return styleResult{detail: "not yet"}
		},
	},

	// The world saw a drift of the Deployment repaired.
	"drift_repaired": {
		eval: func(a Args, v View, st style.Style) styleResult {
			evs := eventsOf(v, st, trace.DriftRepaired, func(e trace.Event) bool {
				return trace.As[trace.Drift](e).Echo == a.Str("name") && (a.Str("what") == "" || trace.As[trace.Drift](e).What == a.Str("what"))
			})
			if len(evs) == 0 {
				return styleResult{detail: "not repaired"}
			}
			return styleResult{ok: true, detail: trace.As[trace.Drift](evs[0]).What + " repaired in " + msField(trace.As[trace.Drift](evs[0]).LatencyMS)}
		},
	},

	// The garbage collector removed the Echo's Deployment.
	"gc_collected": {
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
			return styleResult{ok: true, detail: fmt.Sprintf("collected %s after %s (and %d pods)", obj, Secs(evs[0].Time.Sub(from)), pods)}
		},
	},

	// Someone other than the holder at the step's start took the Lease after
	// the act that stopped the leader (its kill, its release, rlab's
	// partition), at least min and at most max after it.
	"new_leader": {
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
			r := styleResult{ok: true, detail: fmt.Sprintf("%s took over from %s after %s", trace.As[trace.Leader](*took).Identity, prev, Secs(d))}
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
				r.detail += fmt.Sprintf(" (%s after its last renewal)", Secs(since))
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
	},

	// A replica lost the Lease (not released it).
	"leader_lost": {
		eval: func(a Args, v View, st style.Style) styleResult {
			evs := eventsOf(v, st, trace.LeaderLost, func(e trace.Event) bool { return trace.As[trace.Leader](e).Reason == trace.ReasonLost })
			if len(evs) == 0 {
				return styleResult{detail: "nobody lost the Lease"}
			}
			return styleResult{ok: true, detail: fmt.Sprintf("%s lost it after %s", evs[0].Source, Secs(evs[0].Time.Sub(v.Acts.at(st))))}
		},
	},

	// Every standby is trying for the Lease: since the step began (or its
	// act), each replica not holding it has read it, as the election's next
	// try does every RetryPeriod. A replica restarted a moment ago runs
	// before it campaigns; a takeover timed from the next act assumes a
	// standby that is trying.
	"campaigning": {
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
	},

	// Every replica of a Go style reported, since the step began, the
	// client-side rate limit its library set (client.limits, as a pane's
	// API line shows it): qps requests a second (-1: none) and, if given,
	// burst.
	"client_limit": {
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
	},

	// Every replica runs.
	"replicas_running": {
		eval: func(a Args, v View, st style.Style) styleResult {
			n, running := replicasOf(v, st, func(r supervisor.Status) bool { return r.Running })
			return styleResult{ok: n > 0 && running == n, detail: fmt.Sprintf("%d of %d running", running, n)}
		},
	},

	// Every replica reaches the apiserver as it should: no partition, no
	// slowdown of rlab's (rlab do heal, rlab do slow STYLE 0s).
	"connected": {
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
	},

	// Every replica is frozen (SIGSTOP).
	"replicas_paused": {
		eval: func(a Args, v View, st style.Style) styleResult {
			n, paused := replicasOf(v, st, func(r supervisor.Status) bool { return r.Running && r.Paused })
			return styleResult{ok: n > 0 && paused == n, detail: fmt.Sprintf("%d of %d frozen", paused, n)}
		},
	},

	// Every replica was restarted since the step began and the leader (any
	// replica, for the shell loop) has reconciled since.
	"restarted": {
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
	},

	// The student's own requests (through the proxy `rlab env` hands out,
	// or made for them by a key, autoplay or `rlab do`) since the step was
	// shown: what only the apiserver answers (a refusal, a conflict, a
	// review of the student's rights) is seen here, and nowhere else.
	"you_asked": {
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
	},

	// A standby's watches of Echoes: WATCH requests since the act (or over
	// the first `over` of it) by a replica that was not leading then.
	// controller-runtime starts a controller's sources once it leads, unless
	// warm-up (EnableWarmup) starts them at once, before the election.
	"standby_watches": {
		eval: func(a Args, v View, st style.Style) styleResult {
			over := a.Dur("over")
			if over > 0 && v.Now.Sub(v.Acted) < over {
				return styleResult{detail: "measuring for " + Secs(over)}
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
	},

	// API requests through the style's proxies, counted since the step
	// began (or over the first `over` of it).
	"api_requests": {
		eval: func(a Args, v View, st style.Style) styleResult {
			over := a.Dur("over")
			if over > 0 && v.Now.Sub(v.Acted) < over {
				return styleResult{detail: "measuring for " + Secs(over)}
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
				in = " in " + Secs(over)
			}
			return styleResult{ok: ok, detail: fmt.Sprintf("%d %s%s%s", n, what, in, want)}
		},
	},

	// Requests and watch events the fault of a kind touched at the style's
	// proxies since the step began (fault.injected): it was on, and met
	// the traffic it is for.
	"faults_injected": {
		eval: func(a Args, v View, st style.Style) styleResult {
			n := len(eventsOf(v, st, trace.FaultInjected, func(e trace.Event) bool { return trace.As[trace.Injection](e).Fault == a.Str("fault") }))
			ok, want := bounds(a, n)
			return styleResult{ok: ok, detail: fmt.Sprintf("%d touched by the %s fault%s", n, a.Str("fault"), want)}
		},
	},

	// Informer updates of Echo name (resource Echo), its Deployment
	// (resource Deployment) or ConfigMap name (resource ConfigMap) since
	// the step began, of one change (spec: the generation moved; status: it
	// did not), let through to the queue or, with filtered: true, stopped
	// by a predicate; with event: add or delete, those events instead.
	"informer_updates": {
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
	},

	// Reconciles of Echo name since the step began; with cause, only those
	// whose first cause names it (e.g. ConfigMap/echo-defaults).
	"reconciles_after_edit": {
		eval: func(a Args, v View, st style.Style) styleResult {
			evs := eventsOf(v, st, trace.ReconcileStart, func(e trace.Event) bool {
				return e.Object == trace.Object(echov1.Kind, a.Str("name")) && strings.Contains(trace.As[trace.Reconcile](e).CauseEvent, a.Str("cause"))
			})
			ok, want := bounds(a, len(evs))
			return styleResult{ok: ok, detail: fmt.Sprintf("%d reconciles%s", len(evs), want)}
		},
	},

	// Some reconcile answered several queued events at once.
	"coalesced": {
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
	},

	// Failed reconciles were retried at least min times, each after a
	// longer backoff.
	"retries": {
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
	},

	// The world saw the Deployment's message drift from the Echo's and be
	// put back at least min times: two writers undoing each other.
	"flapping": {
		eval: func(a Args, v View, st style.Style) styleResult {
			n := len(eventsOf(v, st, trace.DriftRepaired, func(e trace.Event) bool {
				return trace.As[trace.Drift](e).Echo == a.Str("name") && trace.As[trace.Drift](e).What == trace.DriftMessage
			}))
			mn, _ := a.Int("min")
			return styleResult{ok: n >= mn, detail: fmt.Sprintf("message changed and put back %d times (want ≥%d)", n, mn)}
		},
	},

	// The Deployment carries the Echo's message.
	"deployment_message": {
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
	},

	// The Echo carries the operators' finalizer.
	"has_finalizer": {
		eval: func(a Args, v View, st style.Style) styleResult {
			e, missing := echoOf(a, v, st)
			if e == nil {
				return missing
			}
			return styleResult{ok: echo.HasFinalizer(e.Finalizers), detail: fmt.Sprintf("finalizers %v", e.Finalizers)}
		},
	},

	// The registry ConfigMap lists the Echo under its current uid.
	"registered": {
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
	},

	// The registry ConfigMap does not list the Echo.
	"unregistered": {
		eval: func(a Args, v View, st style.Style) styleResult {
			if uid, ok := nsView(v, st).Registry[a.Str("name")]; ok {
				return styleResult{detail: fmt.Sprintf("%s still lists %s (uid %s)", echo.RegistryName, a.Str("name"), uid)}
			}
			return styleResult{ok: true, detail: "not listed"}
		},
	},

	// The Echo is being deleted and a finalizer still holds it.
	"echo_deleting": {
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
	},

	// An operator cleaned up after the deleted Echo, removed its finalizer,
	// and the Echo is gone.
	"finalized": {
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

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
