package checks

import (
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/sim/world"
)

// The made-up traces of these tests.
var t0, at, ev = simtest.T0, simtest.At, simtest.Ev

func snapshot(ready string, replicas int32, owner string) world.Snapshot {
	sn := world.Snapshot{Namespaces: map[string]*world.NamespaceView{}}
	for _, st := range style.All() {
		sn.Namespaces[st.Namespace()] = &world.NamespaceView{Echoes: map[string]*world.EchoView{
			"hello": {Name: "hello", Ready: ready, Replicas: replicas,
				Deployment: &world.DeploymentView{Name: "echo-hello", Replicas: replicas, ReadyReplicas: replicas, Owner: owner}},
		}}
	}
	return sn
}

// restartedView: every replica of clientgo and shell, and runtime/a, restarted
// at 100ms (all frozen but runtime/b), clientgo's Lease held by holder, and
// reconciler ended a reconcile at 200ms.
func restartedView(holder, reconciler string) View {
	v := View{Snapshot: snapshot("2/2", 2, "Echo/hello"), Began: t0, Acted: t0, Now: at(1000)}
	v.Snapshot.Namespaces["echo-clientgo"].Lease = &world.LeaseView{Holder: holder}
	for _, r := range []string{"shell/a", "clientgo/a", "clientgo/b", "runtime/a", "runtime/b"} {
		st := style.FromSource(r)
		v.Replicas = append(v.Replicas, supervisor.Status{Name: r, Style: st, Running: true, Paused: r != "runtime/b"})
		if r != "runtime/b" {
			v.Events = append(v.Events, ev(100, r, trace.ProcessStart, "", r, nil))
		}
	}
	v.Events = append(v.Events, ev(200, reconciler, trace.ReconcileEnd, "", "Echo/hello", nil))
	return v
}

// withEcho is v with a fresh snapshot whose Echo hello (and namespace) fn
// changed, in every style.
func withEcho(v View, fn func(e *world.EchoView, ns *world.NamespaceView)) View {
	v.Snapshot = snapshot("2/2", 2, "Echo/hello")
	for _, ns := range v.Snapshot.Namespaces {
		fn(ns.Echoes["hello"], ns)
	}
	return v
}

// withSet is v with Echo load-001 beside hello in every style: ready as
// status.ready, its Progressing condition progressing, 0 replicas for "0/0".
func withSet(v View, ready, progressing string) View {
	return withEcho(v, func(_ *world.EchoView, ns *world.NamespaceView) {
		r := int32(0)
		if ready != "0/0" {
			r = 1
		}
		ns.Echoes["load-001"] = &world.EchoView{Name: "load-001", Ready: ready, Replicas: r,
			Conditions: map[string]string{"Progressing": progressing}}
	})
}

// setConverged is the world's report at ms that Echo prefix-00i of st
// converged took ms after it was created.
func setConverged(st, prefix string, i, ms int, took float64) trace.Event {
	name := sandbox.SetName(prefix, i)
	return ev(ms, world.Source, trace.Converged, style.Style(st).Namespace(), "Echo/"+name,
		trace.Convergence{Echo: name, LatencyMS: took, Created: true})
}

// limits is replica's report of its client-side limit.
func limits(replica string, qps float64, burst int) trace.Event {
	return ev(10, replica, trace.ClientLimits, style.FromSource(replica).Namespace(), "", trace.Limits{QPS: qps, Burst: burst})
}

func TestCondEval(t *testing.T) {
	base := View{Snapshot: snapshot("2/2", 2, "Echo/hello"), Began: t0, Acted: t0, Now: at(10000),
		Holders: map[style.Style]string{style.ClientGo: "clientgo-a-1", style.Runtime: "runtime-a-2"}}
	with := func(evs ...trace.Event) View { v := base; v.Events = evs; return v }
	tests := []struct {
		name   string
		cond   lessons.Cond
		view   View
		ok     bool
		final  bool
		detail string
	}{
		{"status matches", lessons.Cond{Kind: "echo_status", Args: Args{"style": "all", "name": "hello", "ready": "2/2"}, Line: 0}, base, true, false, `runtime ready "2/2"`},
		{"status differs", lessons.Cond{Kind: "echo_status", Args: Args{"style": "shell", "name": "hello", "ready": "4/4"}, Line: 0}, base, false, false, `shell ready "2/2"`},
		{"no such echo", lessons.Cond{Kind: "echo_absent", Args: Args{"style": "go", "name": "world"}, Line: 0}, base, true, false, "clientgo gone"},
		{"status current", lessons.Cond{Kind: "status_current", Args: Args{"style": "all", "name": "hello", "current": true}, Line: 0},
			withEcho(base, func(e *world.EchoView, _ *world.NamespaceView) { e.Generation, e.ObservedGeneration = 3, 3 }), true, false, "runtime generation 3, status.observedGeneration 3"},
		{"status about an older spec", lessons.Cond{Kind: "status_current", Args: Args{"style": "runtime", "name": "hello", "current": true}, Line: 0},
			withEcho(base, func(e *world.EchoView, _ *world.NamespaceView) { e.Generation, e.ObservedGeneration = 4, 3 }), false, false, "runtime generation 4, status.observedGeneration 3"},
		{"stale wanted, and stale", lessons.Cond{Kind: "status_current", Args: Args{"style": "runtime", "name": "hello", "current": false}, Line: 0},
			withEcho(base, func(e *world.EchoView, _ *world.NamespaceView) { e.Generation, e.ObservedGeneration = 4, 3 }), true, false, "status.observedGeneration 3"},
		{"status keeps up", lessons.Cond{Kind: "status_behind", Args: Args{"style": "runtime", "name": "hello"}, Line: 0}, base, false, false, `Deployment 2 of 2 ready, status.ready "2/2"`},
		{"status behind its pods", lessons.Cond{Kind: "status_behind", Args: Args{"style": "runtime", "name": "hello"}, Line: 0},
			withEcho(base, func(e *world.EchoView, _ *world.NamespaceView) { e.Ready = "1/2" }), true, false, `Deployment 2 of 2 ready, status.ready "1/2"`},
		{"pods not ready yet is not behind", lessons.Cond{Kind: "status_behind", Args: Args{"style": "runtime", "name": "hello"}, Line: 0},
			withEcho(base, func(e *world.EchoView, _ *world.NamespaceView) { e.Ready, e.Deployment.ReadyReplicas = "1/2", 1 }), false, false, "Deployment 1 of 2 ready"},
		{"status updates let through", lessons.Cond{Kind: "informer_updates", Args: Args{"style": "runtime", "resource": "Echo", "name": "hello", "change": "status", "min": 1}, Line: 0},
			with(ev(10, "runtime/a", trace.InformerUpdate, "echo-runtime", "Echo/hello", trace.Informer{Change: "status"}),
				ev(20, "runtime/a", trace.InformerUpdate, "echo-runtime", "Echo/hello", trace.Informer{Change: "status", Filtered: true}),
				ev(30, "runtime/a", trace.InformerUpdate, "echo-runtime", "Echo/hello", trace.Informer{Change: "spec"})),
			true, false, "runtime 1 (want ≥1)"},
		{"filtered Deployment updates counted apart", lessons.Cond{Kind: "informer_updates", Args: Args{"style": "runtime", "resource": "Deployment", "name": "hello", "filtered": true, "max": 0}, Line: 0},
			with(ev(10, "runtime/a", trace.InformerUpdate, "echo-runtime", "Deployment/echo-hello", trace.Informer{Change: "status", Filtered: true}),
				ev(20, "runtime/a", trace.InformerUpdate, "echo-runtime", "Echo/hello", trace.Informer{Change: "status", Filtered: true})),
			false, false, "runtime 1 (want ≤0)"},
		{"a set scaled to zero, ready and up to date", lessons.Cond{Kind: "echoes_ready", Args: Args{"style": "runtime", "prefix": "load", "count": 1}, Line: 0},
			withSet(base, "0/0", "False"), true, false, "1 of 1 ready"},
		{"a set ready at its first write, still Progressing", lessons.Cond{Kind: "echoes_ready", Args: Args{"style": "runtime", "prefix": "load", "count": 1}, Line: 0},
			withSet(base, "0/0", "True"), false, false, "1 of 1 ready, 1 of them still Progressing"},
		{"a set not ready", lessons.Cond{Kind: "echoes_ready", Args: Args{"style": "runtime", "prefix": "load", "count": 1}, Line: 0},
			withSet(base, "0/1", "True"), false, false, "0 of 1 ready"},
		{"replicas ready", lessons.Cond{Kind: "deployment_replicas", Args: Args{"style": "all", "name": "hello", "replicas": 2, "ready": true}, Line: 0}, base, true, false, "replicas 2, 2 ready"},
		{"owned", lessons.Cond{Kind: "owned", Args: Args{"style": "all", "name": "hello"}, Line: 0}, base, true, false, `controller "Echo/hello"`},
		{"not orphaned while owned", lessons.Cond{Kind: "orphaned", Args: Args{"style": "shell", "name": "hello"}, Line: 0}, base, false, false, "still controlled by Echo/hello"},
		{"new leader in time", lessons.Cond{Kind: "new_leader", Args: Args{"style": "clientgo", "min": 2 * time.Second}, Line: 0},
			with(ev(4500, world.Source, trace.LeaderObserved, "echo-clientgo", "Lease/echo-operator", trace.Leader{Identity: "clientgo-b-3"})),
			true, false, "clientgo-b-3 took over from clientgo-a-1 after 4.50s"},
		{"new leader too soon is final", lessons.Cond{Kind: "new_leader", Args: Args{"style": "clientgo", "min": 2 * time.Second}, Line: 0},
			with(ev(500, world.Source, trace.LeaderObserved, "echo-clientgo", "Lease/echo-operator", trace.Leader{Identity: "clientgo-b-3"})),
			false, true, "sooner than 2s"},
		{"a takeover soon after the kill, long after the last renewal", lessons.Cond{Kind: "new_leader", Args: Args{"style": "clientgo", "min": 3 * time.Second}, Line: 0}, func() View {
			v := with(ev(1500, world.Source, trace.LeaderObserved, "echo-clientgo", "Lease/echo-operator", trace.Leader{Identity: "clientgo-b-3"}))
			v.Renewed = map[string]time.Time{"clientgo/a": at(-2600)} // renewals lagged before the kill at 0
			return v
		}(), true, false, "after 1.50s (4.10s after its last renewal)"},
		{"a takeover too soon after the last renewal", lessons.Cond{Kind: "new_leader", Args: Args{"style": "clientgo", "min": 3 * time.Second}, Line: 0}, func() View {
			v := with(ev(1500, world.Source, trace.LeaderObserved, "echo-clientgo", "Lease/echo-operator", trace.Leader{Identity: "clientgo-b-3"}))
			v.Renewed = map[string]time.Time{"clientgo/a": at(-100), "clientgo/b": at(1400)}
			return v
		}(), false, true, "(1.60s after its last renewal), sooner than 3s"},
		{"same holder is no new leader", lessons.Cond{Kind: "new_leader", Args: Args{"style": "runtime"}, Line: 0},
			with(ev(500, world.Source, trace.LeaderObserved, "echo-runtime", "Lease/echo-operator", trace.Leader{Identity: "runtime-a-2"})),
			false, false, "still runtime-a-2"},
		{"retries growing", lessons.Cond{Kind: "retries", Args: Args{"style": "clientgo", "name": "x", "min": 3}, Line: 0}, with(
			ev(1, "clientgo/a", trace.QueueRequeue, "echo-clientgo", "Echo/x", trace.Queue{Reason: trace.ReasonError, AfterMS: 5.0}),
			ev(2, "clientgo/a", trace.QueueRequeue, "echo-clientgo", "Echo/x", trace.Queue{Reason: trace.ReasonError, AfterMS: 10.0}),
			ev(3, "clientgo/a", trace.QueueRequeue, "echo-clientgo", "Echo/x", trace.Queue{Reason: trace.ReasonAfter, AfterMS: 1.0}),
			ev(4, "clientgo/a", trace.QueueRequeue, "echo-clientgo", "Echo/x", trace.Queue{Reason: trace.ReasonError, AfterMS: 20.0}),
		), true, false, "3 retries, backoff 5ms 10ms 20ms"},
		{"retries not growing", lessons.Cond{Kind: "retries", Args: Args{"style": "clientgo", "name": "x", "min": 2}, Line: 0}, with(
			ev(1, "clientgo/a", trace.QueueRequeue, "echo-clientgo", "Echo/x", trace.Queue{Reason: trace.ReasonError, AfterMS: 10.0}),
			ev(2, "clientgo/a", trace.QueueRequeue, "echo-clientgo", "Echo/x", trace.Queue{Reason: trace.ReasonError, AfterMS: 5.0}),
		), false, false, "2 retries"},
		{"api requests counted by verb, resource, code", lessons.Cond{Kind: "api_requests", Args: Args{"style": "go", "verbs": []string{"update"}, "resource": "echoes/status", "code": 409, "min": 1}, Line: 0}, with(
			ev(1, "proxy/clientgo/a", trace.APIRequest, "echo-clientgo", "Echo/hello", trace.Request{Verb: "update", Resource: "echoes/status", Code: 409}),
			ev(2, "proxy/clientgo/a", trace.APIRequest, "echo-clientgo", "Echo/hello", trace.Request{Verb: "update", Resource: "echoes/status", Code: 200}),
			ev(3, "proxy/runtime/b", trace.APIRequest, "echo-runtime", "Echo/hello", trace.Request{Verb: "update", Resource: "echoes/status", Code: 409}),
		), true, false, "clientgo 1 update echoes/status → 409 (want ≥1), runtime 1"},
		{"the restarted standby tries for the Lease", lessons.Cond{Kind: "campaigning", Args: Args{"style": "clientgo"}, Line: 0}, func() View {
			v := with(ev(300, "proxy/clientgo/a", trace.APIRequest, "echo-clientgo", "Lease/echo-operator", trace.Request{Verb: "get", Resource: "leases"}))
			v.Replicas = []supervisor.Status{{Name: "clientgo/a", Replica: "a", Style: "clientgo", Running: true}, {Name: "clientgo/b", Replica: "b", Style: "clientgo", Running: true}}
			v.Snapshot.Namespaces["echo-clientgo"].Lease = &world.LeaseView{Holder: "clientgo-b-7"}
			return v
		}(), true, false, "1 standby trying"},
		{"a standby that has not asked yet", lessons.Cond{Kind: "campaigning", Args: Args{"style": "clientgo"}, Line: 0}, func() View {
			v := with(ev(300, "proxy/clientgo/b", trace.APIRequest, "echo-clientgo", "Lease/echo-operator", trace.Request{Verb: "update", Resource: "leases"}))
			v.Replicas = []supervisor.Status{{Name: "clientgo/a", Replica: "a", Style: "clientgo", Running: true}, {Name: "clientgo/b", Replica: "b", Style: "clientgo", Running: true}}
			v.Snapshot.Namespaces["echo-clientgo"].Lease = &world.LeaseView{Holder: "clientgo-b-7"}
			return v
		}(), false, false, "not asked for the Lease yet: clientgo/a"},
		{"a warm standby watches", lessons.Cond{Kind: "standby_watches", Args: Args{"style": "runtime", "min": 1}, Line: 0}, with(
			ev(100, "proxy/runtime/a", trace.APIRequest, "echo-runtime", "", trace.Request{Verb: "watch", Resource: "echoes"}),
			ev(120, "proxy/runtime/b", trace.APIRequest, "echo-runtime", "", trace.Request{Verb: "watch", Resource: "echoes"}),
			ev(130, "proxy/runtime/b", trace.APIRequest, "echo-runtime", "", trace.Request{Verb: "watch", Resource: "deployments"}),
			ev(900, "runtime/a", trace.LeaderAcquired, "echo-runtime", "Lease/echo-operator", nil),
		), true, false, "1 watch of echoes by a standby (want ≥1) (runtime/b 1)"},
		{"a cold standby does not", lessons.Cond{Kind: "standby_watches", Args: Args{"style": "runtime", "max": 0, "over": 5 * time.Second}, Line: 0}, with(
			ev(900, "runtime/a", trace.LeaderAcquired, "echo-runtime", "Lease/echo-operator", nil),
			ev(901, "proxy/runtime/a", trace.APIRequest, "echo-runtime", "", trace.Request{Verb: "watch", Resource: "echoes"}),
			ev(950, "proxy/clientgo/b", trace.APIRequest, "echo-clientgo", "", trace.Request{Verb: "watch", Resource: "echoes"}),
		), true, false, "0 watches of echoes by a standby (want ≤0)"},
		{"a leader that released, restarted warm, watches as a standby", lessons.Cond{Kind: "standby_watches", Args: Args{"style": "runtime", "min": 1}, Line: 0}, with(
			ev(100, "runtime/a", trace.LeaderAcquired, "echo-runtime", "Lease/echo-operator", nil),
			ev(200, "runtime/a", trace.LeaderLost, "echo-runtime", "Lease/echo-operator", trace.Leader{Reason: trace.ReasonReleased}),
			ev(3000, "proxy/runtime/a", trace.APIRequest, "echo-runtime", "", trace.Request{Verb: "watch", Resource: "echoes"}),
			ev(3100, "runtime/b", trace.LeaderAcquired, "echo-runtime", "Lease/echo-operator", nil),
		), true, false, "1 watch of echoes by a standby (want ≥1) (runtime/a 1)"},
		{"a leader's watch a moment before its LeaderAcquired", lessons.Cond{Kind: "standby_watches", Args: Args{"style": "runtime", "max": 0}, Line: 0}, with(
			ev(3000, "proxy/runtime/a", trace.APIRequest, "echo-runtime", "", trace.Request{Verb: "watch", Resource: "echoes"}),
			ev(3010, "runtime/a", trace.LeaderAcquired, "echo-runtime", "Lease/echo-operator", nil),
		), true, false, "0 watches"},
		{"a standby's watch after the window", lessons.Cond{Kind: "standby_watches", Args: Args{"style": "runtime", "min": 1, "over": 5 * time.Second}, Line: 0}, with(
			ev(6000, "proxy/runtime/b", trace.APIRequest, "echo-runtime", "", trace.Request{Verb: "watch", Resource: "echoes"}),
		), false, false, "0 watches"},
		{"a standby's watch before the act", lessons.Cond{Kind: "standby_watches", Args: Args{"style": "runtime", "min": 1}, Line: 0}, func() View {
			v := with(ev(100, "proxy/runtime/b", trace.APIRequest, "echo-runtime", "", trace.Request{Verb: "watch", Resource: "echoes"}))
			v.Acted = at(500)
			return v
		}(), false, false, "0 watches"},
		{"your refused patch", lessons.Cond{Kind: "you_asked", Args: Args{"verbs": []string{"patch"}, "resource": "echoes", "code": 422}, Line: 0}, with(
			ev(1, trace.SourceYou, trace.APIRequest, "echo-clientgo", "Echo/world", trace.Request{Verb: "get", Resource: "echoes", Code: 200}),
			ev(2, trace.SourceYou, trace.APIRequest, "echo-clientgo", "Echo/world", trace.Request{Verb: "patch", Resource: "echoes", Code: 422}),
		), true, false, "1 request of yours"},
		{"an operator's refused patch is not yours", lessons.Cond{Kind: "you_asked", Args: Args{"verbs": []string{"patch"}, "resource": "echoes", "code": 422}, Line: 0}, with(
			ev(1, "proxy/clientgo/a", trace.APIRequest, "echo-clientgo", "Echo/world", trace.Request{Verb: "patch", Resource: "echoes", Code: 422}),
		), false, false, "0 requests of yours"},
		{"your patch, accepted", lessons.Cond{Kind: "you_asked", Args: Args{"verbs": []string{"patch"}, "code": 422}, Line: 0}, with(
			ev(1, trace.SourceYou, trace.APIRequest, "echo-clientgo", "Echo/world", trace.Request{Verb: "patch", Resource: "echoes", Code: 200}),
		), false, false, "0 requests of yours (1 more answered otherwise)"},
		{"api requests over a window not yet elapsed", lessons.Cond{Kind: "api_requests", Args: Args{"style": "shell", "over": 20 * time.Second}, Line: 0}, base, false, false, "measuring"},
		{"api requests over a window", lessons.Cond{Kind: "api_requests", Args: Args{"style": "shell", "verbs": []string{"get"}, "max": 1, "over": 5 * time.Second}, Line: 0}, with(
			ev(100, "proxy/shell/a", trace.APIRequest, "echo-shell", "", trace.Request{Verb: "get", Resource: "echoes"}),
			ev(6000, "proxy/shell/a", trace.APIRequest, "echo-shell", "", trace.Request{Verb: "get", Resource: "echoes"}),
		), true, false, "1 get in 5.00s"},
		{"coalesced", lessons.Cond{Kind: "coalesced", Args: Args{"style": "runtime", "name": "hello"}, Line: 0}, with(
			ev(1, "runtime/a", trace.InformerUpdate, "echo-runtime", "Echo/hello", nil),
			ev(2, "runtime/a", trace.InformerUpdate, "echo-runtime", "Echo/hello", nil),
			ev(3, "runtime/a", trace.ReconcileStart, "echo-runtime", "Echo/hello", trace.Reconcile{Causes: 2}),
		), true, false, "2 Echo updates → 1 reconciles, one answered 2 at once"},
		{"noticed only after the action", lessons.Cond{Kind: "noticed", Args: Args{"style": "shell", "name": "hello"}, Line: 0}, func() View {
			v := with(ev(100, "shell/a", trace.ReconcileStart, "echo-shell", "Echo/hello", trace.Reconcile{Cause: "poll", CauseEvent: "poll tick"}),
				ev(900, "shell/a", trace.ReconcileStart, "echo-shell", "Echo/hello", trace.Reconcile{Cause: "poll", CauseEvent: "poll tick"}))
			v.Acted = at(500)
			return v
		}(), true, false, "after 0.40s (poll: poll tick)"},
		{"finalizer missing", lessons.Cond{Kind: "has_finalizer", Args: Args{"style": "shell", "name": "hello"}, Line: 0}, base, false, false, "finalizers []"},
		{"finalizer present", lessons.Cond{Kind: "has_finalizer", Args: Args{"style": "shell", "name": "hello"}, Line: 0}, withEcho(base, func(e *world.EchoView, _ *world.NamespaceView) {
			e.Finalizers = []string{"other.io/x", echo.Finalizer}
		}), true, false, "kkloud.io/echo-registry"},
		{"no registry", lessons.Cond{Kind: "registered", Args: Args{"style": "clientgo", "name": "hello"}, Line: 0}, base, false, false, "no ConfigMap echo-registry"},
		{"registered under an old uid", lessons.Cond{Kind: "registered", Args: Args{"style": "clientgo", "name": "hello"}, Line: 0}, withEcho(base, func(e *world.EchoView, ns *world.NamespaceView) {
			e.UID, ns.Registry = "u2", map[string]string{"hello": "u1"}
		}), false, false, "hello not listed"},
		{"registered", lessons.Cond{Kind: "registered", Args: Args{"style": "clientgo", "name": "hello"}, Line: 0}, withEcho(base, func(e *world.EchoView, ns *world.NamespaceView) {
			e.UID, ns.Registry = "u1", map[string]string{"hello": "u1"}
		}), true, false, "lists hello"},
		{"still registered", lessons.Cond{Kind: "unregistered", Args: Args{"style": "runtime", "name": "hello"}, Line: 0}, withEcho(base, func(_ *world.EchoView, ns *world.NamespaceView) {
			ns.Registry = map[string]string{"hello": "u1"}
		}), false, false, "still lists hello"},
		{"deleting, held", lessons.Cond{Kind: "echo_deleting", Args: Args{"style": "runtime", "name": "hello"}, Line: 0}, withEcho(base, func(e *world.EchoView, _ *world.NamespaceView) {
			e.Deleting, e.Finalizers = true, []string{echo.Finalizer}
		}), true, false, "held by [kkloud.io/echo-registry]"},
		{"not deleting", lessons.Cond{Kind: "echo_deleting", Args: Args{"style": "runtime", "name": "hello"}, Line: 0}, base, false, false, "not being deleted"},
		{"cleaned up, not gone", lessons.Cond{Kind: "finalized", Args: Args{"style": "clientgo", "name": "hello"}, Line: 0}, with(
			ev(1, "clientgo/b", trace.Finalizer, "echo-clientgo", "Echo/hello", trace.FinalizerChange{Action: trace.FinalizerRemoved}),
		), false, false, "clientgo/b cleaned up; the Echo is not gone yet"},
		{"cleaned up, its trace line lost", lessons.Cond{Kind: "finalized", Args: Args{"style": "runtime", "name": "hello"}, Line: 0}, with(
			trace.Request{Verb: "patch", Resource: "echoes", Code: 200}.Event(at(1), "proxy/runtime/b", "echo-runtime", "Echo/hello"),
			ev(2, world.Source, trace.EchoDeleted, "echo-runtime", "Echo/hello", trace.Deleted{WaitedMS: 5040.0}),
		), true, false, "proxy/runtime/b (its proxy saw patch echoes → 200) cleaned up; gone after"},
		{"a status write, the student's patch, a refused one: no cleanup", lessons.Cond{Kind: "finalized", Args: Args{"style": "runtime", "name": "hello"}, Line: 0}, with(
			trace.Request{Verb: "patch", Resource: "echoes/status", Code: 200}.Event(at(1), "proxy/runtime/b", "echo-runtime", "Echo/hello"),
			trace.Request{Verb: "patch", Resource: "echoes", Code: 200}.Event(at(1), "proxy/you", "echo-runtime", "Echo/hello"),
			trace.Request{Verb: "update", Resource: "echoes", Code: 409}.Event(at(1), "proxy/runtime/a", "echo-runtime", "Echo/hello"),
			ev(2, world.Source, trace.EchoDeleted, "echo-runtime", "Echo/hello", trace.Deleted{WaitedMS: 5040.0}),
		), false, false, "no cleanup yet"},
		{"finalized", lessons.Cond{Kind: "finalized", Args: Args{"style": "clientgo", "name": "hello"}, Line: 0}, with(
			ev(1, "clientgo/b", trace.Finalizer, "echo-clientgo", "Echo/hello", trace.FinalizerChange{Action: trace.FinalizerRemoved}),
			ev(2, world.Source, trace.EchoDeleted, "echo-clientgo", "Echo/hello", trace.Deleted{WaitedMS: 5040.0}),
		), true, false, "gone after waiting 5.04s"},
		{"a poll before the student's edit noticed nothing", lessons.Cond{Kind: "noticed", Args: Args{"style": "shell", "name": "hello"}, Line: 0}, func() View {
			v := withEcho(base, func(e *world.EchoView, _ *world.NamespaceView) { e.Edited = at(3000) })
			v.Events = []trace.Event{ev(1000, "shell/a", trace.ReconcileStart, "echo-shell", "Echo/hello", trace.Reconcile{Cause: "poll"}),
				ev(4500, "shell/a", trace.ReconcileStart, "echo-shell", "Echo/hello", trace.Reconcile{Cause: "poll"})}
			return v
		}(), true, false, "after 1.70s (poll)"},
		{"no edit yet", lessons.Cond{Kind: "noticed", Args: Args{"style": "shell", "name": "hello"}, Line: 0},
			with(ev(1000, "shell/a", trace.ReconcileStart, "echo-shell", "Echo/hello", trace.Reconcile{Cause: "poll"})), false, false, "no edit yet"},
		{"a set converged, slower than the floor", lessons.Cond{Kind: "echoes_converged", Args: Args{"style": "clientgo", "prefix": "base", "count": 3, "min": 20 * time.Second}, Line: 0},
			with(setConverged("clientgo", "base", 1, 1000, 500), setConverged("clientgo", "base", 2, 15000, 14400),
				setConverged("clientgo", "base", 3, 24000, 23300), setConverged("runtime", "base", 1, 900, 400)),
			true, false, "clientgo 3 converged in 23.50s (0.1/s)"},
		{"a set converged sooner than min is final", lessons.Cond{Kind: "echoes_converged", Args: Args{"style": "clientgo", "prefix": "base", "count": 2, "min": 20 * time.Second}, Line: 0},
			with(setConverged("clientgo", "base", 1, 1000, 500), setConverged("clientgo", "base", 2, 5000, 4400)),
			false, true, "2 converged in 4.50s (0.4/s), sooner than 20s"},
		{"a set converged later than max is final", lessons.Cond{Kind: "echoes_converged", Args: Args{"style": "runtime", "prefix": "fast", "count": 2, "max": 10 * time.Second}, Line: 0},
			with(setConverged("runtime", "fast", 1, 1000, 500), setConverged("runtime", "fast", 2, 12000, 11400)),
			false, true, "later than 10s"},
		{"a set half converged; edits, other sets and Echoes past count are not its", lessons.Cond{Kind: "echoes_converged", Args: Args{"style": "runtime", "prefix": "fast", "count": 2}, Line: 0},
			with(setConverged("runtime", "fast", 1, 1000, 500), setConverged("runtime", "fast", 3, 1000, 500), setConverged("runtime", "faster", 2, 1000, 500),
				ev(2000, world.Source, trace.Converged, "echo-runtime", "Echo/fast-002", trace.Convergence{Echo: "fast-002", LatencyMS: 40.0})),
			false, false, "runtime 1 of 2 converged"},
		{"a set faster than an earlier one", lessons.Cond{Kind: "echoes_converged", Args: Args{"style": "clientgo", "prefix": "tuned", "count": 1, "faster_than": "base"}, Line: 0}, func() View {
			v := with(setConverged("clientgo", "tuned", 1, 3000, 2500))
			v.Sets = map[SetKey]world.Batch{{"clientgo", "base"}: {N: 60, Created: at(-60000), Converged: at(-35000)}}
			return v
		}(), true, false, "1 converged in 2.50s (0.4/s), base took 25.00s"},
		{"a set no faster than an earlier one is final", lessons.Cond{Kind: "echoes_converged", Args: Args{"style": "clientgo", "prefix": "tuned", "count": 1, "faster_than": "base"}, Line: 0}, func() View {
			v := with(setConverged("clientgo", "tuned", 1, 3000, 2500))
			v.Sets = map[SetKey]world.Batch{{"clientgo", "base"}: {N: 60, Created: at(-60000), Converged: at(-58000)}, {"runtime", "base"}: {N: 1}}
			return v
		}(), false, true, "not faster than base (2.00s)"},
		{"the earlier set not timed here", lessons.Cond{Kind: "echoes_converged", Args: Args{"style": "clientgo", "prefix": "tuned", "count": 1, "faster_than": "base"}, Line: 0},
			with(setConverged("clientgo", "tuned", 1, 3000, 2500)), true, false, "base not timed in this session"},
		{"the client limit reported by every replica", lessons.Cond{Kind: "client_limit", Args: Args{"style": "clientgo", "qps": float32(100), "burst": 200}, Line: 0}, func() View {
			v := with(limits("clientgo/a", 5, 10), limits("clientgo/a", 100, 200), limits("clientgo/b", 100, 200))
			v.Replicas = []supervisor.Status{{Name: "clientgo/a", Style: "clientgo"}, {Name: "clientgo/b", Style: "clientgo"}}
			return v
		}(), true, false, "clientgo 2 of 2 report it"},
		{"a replica with the old limit, another not restarted", lessons.Cond{Kind: "client_limit", Args: Args{"style": "clientgo", "qps": float32(100), "burst": 200}, Line: 0}, func() View {
			v := with(limits("clientgo/a", 100, 200), limits("clientgo/a", 5, 10))
			v.Replicas = []supervisor.Status{{Name: "clientgo/a", Style: "clientgo"}, {Name: "clientgo/b", Style: "clientgo"}}
			return v
		}(), false, false, "clientgo/a 5/s burst 10, clientgo/b not reported since"},
		{"no client limit", lessons.Cond{Kind: "client_limit", Args: Args{"style": "runtime", "qps": float32(-1)}, Line: 0}, func() View {
			v := with(limits("runtime/a", -1, 0))
			v.Replicas = []supervisor.Status{{Name: "runtime/a", Style: "runtime"}}
			return v
		}(), true, false, "runtime 1 of 1 report it"},
		{"restarted, the new leader reconciled", lessons.Cond{Kind: "restarted", Args: Args{"style": "clientgo"}, Line: 0}, restartedView("clientgo-b-7", "clientgo/b"),
			true, false, "restarted; clientgo/b leads and has reconciled"},
		{"restarted, only the standby reconciled", lessons.Cond{Kind: "restarted", Args: Args{"style": "clientgo"}, Line: 0}, restartedView("clientgo-b-7", "clientgo/a"),
			false, false, "clientgo/b leads, no reconcile yet"},
		{"restarted, nobody leads", lessons.Cond{Kind: "restarted", Args: Args{"style": "clientgo"}, Line: 0}, restartedView("", "clientgo/a"),
			false, false, `no restarted replica leads yet (holder "")`},
		{"restarted shell loop needs no leader", lessons.Cond{Kind: "restarted", Args: Args{"style": "shell"}, Line: 0}, restartedView("", "shell/a"),
			true, false, "shell restarted and has reconciled"},
		{"not every replica restarted", lessons.Cond{Kind: "restarted", Args: Args{"style": "runtime"}, Line: 0}, restartedView("runtime-a-9", "runtime/a"),
			false, false, "runtime 1 of 2 replicas restarted"},
		{"replicas paused", lessons.Cond{Kind: "replicas_paused", Args: Args{"style": "go"}, Line: 0}, restartedView("", ""),
			false, false, "clientgo 2 of 2 frozen, runtime 1 of 2 frozen"},
		{"a partitioned replica is not connected", lessons.Cond{Kind: "connected", Args: Args{"style": "go"}, Line: 0}, func() View {
			v := base
			v.Replicas = []supervisor.Status{{Name: "clientgo/a", Style: "clientgo", Running: true}, {Name: "clientgo/b", Style: "clientgo", Running: true},
				{Name: "runtime/a", Style: "runtime", Running: true}}
			v.Cut = map[string]string{"clientgo/b": "refuse"}
			return v
		}(), false, false, "clientgo clientgo/b refuse, runtime 1 of 1 connected"},
		{"healed", lessons.Cond{Kind: "connected", Args: Args{"style": "clientgo"}, Line: 0}, func() View {
			v := base
			v.Replicas = []supervisor.Status{{Name: "clientgo/a", Style: "clientgo", Running: true}, {Name: "clientgo/b", Style: "clientgo"}}
			return v
		}(), true, false, "2 of 2 connected"},
		{"replicas running", lessons.Cond{Kind: "replicas_running", Args: Args{"style": "clientgo"}, Line: 0}, func() View {
			v := base
			v.Replicas = []supervisor.Status{{Name: "clientgo/a", Style: "clientgo", Running: true}, {Name: "clientgo/b", Style: "clientgo"}}
			return v
		}(), false, false, "1 of 2 running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := EvalCond(tt.cond, tt.view)
			if o.OK != tt.ok || o.Final != tt.final || !strings.Contains(o.Detail, tt.detail) {
				t.Errorf("= %+v, want ok %v final %v detail containing %q", o, tt.ok, tt.final, tt.detail)
			}
		})
	}
}

func TestCheckNeedsEveryCondition(t *testing.T) {
	c := &lessons.Check{Within: time.Minute, Conds: []lessons.Cond{
		{Kind: "echo_status", Args: Args{"style": "all", "name": "hello", "ready": "2/2"}, Line: 0},
		{Kind: "deployment_absent", Args: Args{"style": "all", "name": "hello"}, Line: 0},
	}}
	o := Eval(c, View{Snapshot: snapshot("2/2", 2, "Echo/hello")})
	if o.OK || !strings.Contains(o.Detail, "deployment_absent: shell echo-hello still there") {
		t.Fatalf("%+v", o)
	}
}

// A check's words name what is checked, for the panel.
func TestDescribe(t *testing.T) {
	c := &lessons.Check{Hold: 6 * time.Second, Conds: []lessons.Cond{
		{Kind: "deployment_replicas", Args: Args{"style": "all", "name": "hello", "replicas": 4, "ready": true}, Line: 0},
		{Kind: "new_leader", Args: Args{"style": "go", "max": 4 * time.Second}, Line: 0},
		{Kind: "api_requests", Args: Args{"style": "shell", "verbs": []string{"get", "list"}, "resource": "echoes", "max": 0}, Line: 0},
	}}
	want := "every style: Deployment echo-hello asks for 4 replicas, all ready\n" +
		"both Go styles: another replica takes the Lease, within 4s of the leader stopping\n" +
		"shell: get/list requests on echoes (want ≤0)\n" +
		"all of it holding for 6s"
	if got := c.Describe(); got != want {
		t.Errorf("Describe =\n%s\nwant\n%s", got, want)
	}
}

// TestQuotaRefusalSaid: a check that fails where the namespace's quota
// refuses a Deployment its pods says so, in the apiserver's words, with
// what to do; one that passes, or fails for another reason, does not.
func TestQuotaRefusalSaid(t *testing.T) {
	const msg = `pods "echo-hello-7d9f-x" is forbidden: exceeded quota: rlab-student, requested: pods=1, used: pods=10, limited: pods=10`
	tests := []struct {
		name    string
		ready   string
		refused string
		want    string // in the detail; "" for no quota words
	}{
		{"refused", "2/3", msg, "the namespace's quota refuses Deployment echo-hello its pods, the apiserver says: " + msg + ". kubectl describe quota"},
		{"passing", "3/3", msg, ""},
		{"another reason", "2/3", "", ""},
		{"another refusal", "2/3", "admission webhook denied", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sn := snapshot(tt.ready, 3, "Echo/hello")
			sn.Style(style.Shell).Echoes["hello"].Deployment.Refused = tt.refused
			c := lessons.Cond{Kind: "echo_status", Args: lessons.Args{"style": "shell", "name": "hello", "ready": "3/3"}}
			got := EvalCond(c, View{Snapshot: sn}).Detail
			if has := strings.Contains(got, "quota refuses"); tt.want == "" && has || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("detail %q, want %q", got, tt.want)
			}
		})
	}
}
