package stats

import (
	"reflect"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/supervisor"
	"github.com/kkloud/rlab/sim/world"
)

// The made-up traces of these tests.
var t0, at, ev = simtest.T0, simtest.At, simtest.Ev

func TestTUIStatsStage(t *testing.T) {
	tests := []struct {
		name  string
		style style.Style
		ev    trace.Event
		stage string
	}{
		{"informer", style.ClientGo, ev(1, style.ClientGo.Source("a"), trace.InformerUpdate, style.ClientGo.Namespace(), "Echo/hello", nil), "informer"},
		{"queue add", style.Runtime, ev(1, style.Runtime.Source("b"), trace.QueueAdd, style.Runtime.Namespace(), "Echo/hello", trace.Queue{Depth: 1}), "queue"},
		{"queue get", style.Runtime, ev(1, style.Runtime.Source("b"), trace.QueueGet, style.Runtime.Namespace(), "Echo/hello", trace.Queue{Depth: 0}), "reconcile"},
		{"reconcile start", style.ClientGo, ev(1, style.ClientGo.Source("a"), trace.ReconcileStart, style.ClientGo.Namespace(), "Echo/hello", nil), "reconcile"},
		{"api create", style.ClientGo, ev(1, "proxy/"+style.ClientGo.Source("a"), trace.APIRequest, style.ClientGo.Namespace(), "", trace.Request{Verb: "create", Resource: "deployments"}), "API"},
		{"api watch", style.ClientGo, ev(1, "proxy/"+style.ClientGo.Source("a"), trace.APIRequest, style.ClientGo.Namespace(), "", trace.Request{Verb: "watch", Resource: "echoes"}), "watch"},
		{"lease renewal moves nothing", style.ClientGo, ev(1, "proxy/"+style.ClientGo.Source("a"), trace.APIRequest, style.ClientGo.Namespace(), "", trace.Request{Verb: "update", Resource: "leases"}), ""},
		{"poll tick", style.Shell, ev(1, style.Shell.Source("a"), trace.PollTick, style.Shell.Namespace(), "", trace.Poll{IntervalS: 5}), "poll"},
		{"kubectl get", style.Shell, ev(1, style.Shell.Source("a"), trace.Kubectl, style.Shell.Namespace(), "", trace.Command{Verb: "get echoes"}), "get"},
		{"kubectl apply", style.Shell, ev(1, style.Shell.Source("a"), trace.Kubectl, style.Shell.Namespace(), "", trace.Command{Verb: "apply deployments"}), "apply"},
		{"kubectl patch", style.Shell, ev(1, style.Shell.Source("a"), trace.Kubectl, style.Shell.Namespace(), "", trace.Command{Verb: "patch echoes/status"}), "patch"},
		{"shell api is not a stage", style.Shell, ev(1, "proxy/"+style.Shell.Source("a"), trace.APIRequest, style.Shell.Namespace(), "", trace.Request{Verb: "get", Resource: "echoes"}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(style.All())
			s.Apply(tt.ev)
			st := s.Styles[tt.style]
			got := ""
			if st.Stage >= 0 {
				got = tt.style.Traits().Stages[st.Stage]
			}
			if got != tt.stage {
				t.Fatalf("stage = %q, want %q", got, tt.stage)
			}
		})
	}
}

func TestTUIStatsFold(t *testing.T) {
	s := New([]style.Style{style.Shell, style.ClientGo})
	for _, e := range []trace.Event{
		ev(0, supervisor.Source, trace.ProcessStart, "", style.ClientGo.Source("a"), trace.Process{PID: 11, Restarts: 0}),
		ev(0, supervisor.Source, trace.ProcessStart, "", style.ClientGo.Source("b"), trace.Process{PID: 12, Restarts: 0}),
		ev(10, style.ClientGo.Source("a"), trace.LeaderAcquired, style.ClientGo.Namespace(), "Lease/echo-operator", trace.Leader{Identity: style.ClientGo.Identity("a", 11)}),
		ev(100, style.ClientGo.Source("a"), trace.QueueAdd, style.ClientGo.Namespace(), "Echo/hello", trace.Queue{Depth: 1}),
		ev(101, style.ClientGo.Source("a"), trace.QueueAdd, style.ClientGo.Namespace(), "Echo/hello", trace.Queue{Depth: 2}),
		ev(102, style.ClientGo.Source("a"), trace.QueueGet, style.ClientGo.Namespace(), "Echo/hello", trace.Queue{Depth: 1}),
		ev(103, style.ClientGo.Source("a"), trace.ReconcileStart, style.ClientGo.Namespace(), "Echo/hello", trace.Reconcile{Cause: trace.CauseEvent, CauseEvent: "UPDATE Echo/hello", Causes: 2}),
		ev(110, style.ClientGo.Source("a"), trace.ReconcileEnd, style.ClientGo.Namespace(), "Echo/hello", trace.Reconcile{Result: trace.ResultError, DurationMS: 7.0, Error: "conflict"}),
		ev(111, style.ClientGo.Source("a"), trace.QueueRequeue, style.ClientGo.Namespace(), "Echo/hello", trace.Queue{Depth: 1, Reason: "error"}),
		ev(120, "proxy/"+style.ClientGo.Source("a"), trace.APIRequest, style.ClientGo.Namespace(), "", trace.Request{Verb: "list", Resource: "echoes"}),
		ev(61_000, "proxy/"+style.ClientGo.Source("a"), trace.APIRequest, style.ClientGo.Namespace(), "", trace.Request{Verb: "list", Resource: "echoes"}),
		ev(61_500, "proxy/"+style.ClientGo.Source("b"), trace.APIRequest, style.ClientGo.Namespace(), "", trace.Request{Verb: "get", Resource: "leases"}),
		ev(62_000, world.Source, trace.DriftDetected, style.ClientGo.Namespace(), "Deployment/echo-hello", trace.Drift{What: trace.DriftReplicas}),
		ev(62_021, world.Source, trace.DriftRepaired, style.ClientGo.Namespace(), "Deployment/echo-hello", trace.Drift{What: trace.DriftReplicas, LatencyMS: 21.0}),
		ev(62_100, world.Source, trace.GCCollected, style.ClientGo.Namespace(), "Pod/echo-hello-x", trace.GC{Owner: "ReplicaSet/echo-hello-1"}),
		ev(63_000, supervisor.Source, trace.ProcessExit, "", style.ClientGo.Source("a"), trace.Process{PID: 11, Signal: "killed"}),
		ev(64_000, world.Source, trace.LeaderObserved, style.ClientGo.Namespace(), "Lease/echo-operator", trace.Leader{Identity: style.ClientGo.Identity("b", 12)}),
		ev(64_000, "rlab", trace.Dropped, "", "", trace.Loss{Count: 5}),
	} {
		s.Apply(e)
	}
	st := s.Styles[style.ClientGo]
	now := at(64_000)
	checks := []struct {
		name      string
		got, want any
	}{
		{"adds", st.Adds, 3},
		{"retries", st.Retries, 1},
		{"depth", st.Depth, 1},
		{"reconciles", st.Reconciles, 1},
		{"errors", st.Errors, 1},
		{"last cause", st.Last.CauseEvent, "UPDATE Echo/hello"},
		{"last causes", st.Last.Causes, 2},
		{"last error", st.Last.Error, "conflict"},
		{"api total", st.APITotal, 3},
		{"per minute drops the first", st.PerMinute(now), 2},
		{"verbs", st.Verbs, map[VerbKey]int{{Verb: "list", Resource: "echoes"}: 2, {Verb: "get", Resource: "leases"}: 1}},
		{"drift latency", st.Drift.LatencyMS, 21.0},
		{"collected", len(st.Collected(now, 4*time.Second)), 1},
		{"collected forgotten", len(st.Collected(at(70_000), 4*time.Second)), 0},
		{"a down", st.Replicas["a"].Running, false},
		{"a signal", st.Replicas["a"].Signal, "killed"},
		{"leader moved to b", st.Leader, "b"},
		{"acquired", st.Acquired, 1},
		{"dropped", s.Dropped, 5},
		{"events", s.Events, 18},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestTUIStatsProcesses: a replica's process state comes from the
// supervisor's events alone, and a proxy's dropped events still count as
// requests (the screen and a replay need nothing else).
func TestTUIStatsProcesses(t *testing.T) {
	a, b := style.ClientGo.Source("a"), style.ClientGo.Source("b")
	proc := func(ms int, kind trace.Kind, object string, f trace.Payload) trace.Event {
		return ev(ms, supervisor.Source, kind, "", object, f)
	}
	type want struct {
		running, paused bool
		signal          string
	}
	tests := []struct {
		name string
		evs  []trace.Event
		a    *want // nil: a is not on the pane
		api  int
	}{
		{"started", []trace.Event{proc(0, trace.ProcessStart, a, trace.Process{PID: 11})}, &want{running: true}, 0},
		{"frozen", []trace.Event{
			proc(0, trace.ProcessStart, a, trace.Process{PID: 11}),
			proc(1, trace.ProcessPause, a, trace.Process{PID: 11}),
		}, &want{running: true, paused: true}, 0},
		{"let go on", []trace.Event{
			proc(0, trace.ProcessStart, a, trace.Process{PID: 11}),
			proc(1, trace.ProcessPause, a, trace.Process{PID: 11}),
			proc(2, trace.ProcessResume, a, trace.Process{PID: 11}),
		}, &want{running: true}, 0},
		{"killed while frozen", []trace.Event{
			proc(0, trace.ProcessStart, a, trace.Process{PID: 11}),
			proc(1, trace.ProcessPause, a, trace.Process{PID: 11}),
			proc(2, trace.ProcessExit, a, trace.Process{PID: 11, Signal: "killed"}),
		}, &want{signal: "killed"}, 0},
		{"removed for good", []trace.Event{
			proc(0, trace.ProcessStart, a, trace.Process{PID: 11}),
			proc(1, trace.ProcessExit, a, trace.Process{PID: 11, Removed: true}),
		}, nil, 0},
		{"a proxy's drops are requests, the screen's are not", []trace.Event{
			proc(0, trace.ProcessStart, a, trace.Process{PID: 11}),
			ev(1, "proxy/"+b, trace.APIRequest, style.ClientGo.Namespace(), "", trace.Request{Verb: "get", Resource: "leases"}),
			ev(2, "proxy/"+b, trace.Dropped, "", "", trace.Loss{Count: 7}),
			ev(3, "rlab", trace.Dropped, "", "", trace.Loss{Count: 5}),
		}, &want{running: true}, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New([]style.Style{style.ClientGo})
			for _, e := range tt.evs {
				s.Apply(e)
			}
			st := s.Styles[style.ClientGo]
			r := st.Replicas["a"]
			switch {
			case tt.a == nil && r != nil:
				t.Fatalf("replica a still on the pane: %+v", r)
			case tt.a != nil && r == nil:
				t.Fatal("replica a not on the pane")
			case tt.a != nil && (want{r.Running, r.Paused, r.Signal}) != *tt.a:
				t.Errorf("replica a = %+v, want %+v", want{r.Running, r.Paused, r.Signal}, *tt.a)
			}
			if st.APITotal != tt.api {
				t.Errorf("API total = %d, want %d", st.APITotal, tt.api)
			}
		})
	}
}

func TestTUIStatsSpark(t *testing.T) {
	s := New([]style.Style{style.Runtime})
	st := s.Styles[style.Runtime]
	if got := st.Spark(at(0)); got[SparkLen-1] != 0 || len(got) != SparkLen {
		t.Fatalf("empty spark = %v", got)
	}
	for _, e := range []trace.Event{
		ev(1000, style.Runtime.Source("a"), trace.QueueAdd, style.Runtime.Namespace(), "", trace.Queue{Depth: 1}),
		ev(1100, style.Runtime.Source("a"), trace.QueueAdd, style.Runtime.Namespace(), "", trace.Queue{Depth: 3}),
		ev(1200, style.Runtime.Source("a"), trace.QueueGet, style.Runtime.Namespace(), "", trace.Queue{Depth: 2}),
		ev(3000, style.Runtime.Source("a"), trace.QueueGet, style.Runtime.Namespace(), "", trace.Queue{Depth: 0}),
	} {
		s.Apply(e)
	}
	got := st.Spark(at(4000))
	want := []int{0, 3, 2, 0, 0} // seconds 0..4: before, max of 1, carried, max of 3, carried
	if !reflect.DeepEqual(got[SparkLen-5:], want) {
		t.Fatalf("spark tail = %v, want %v", got[SparkLen-5:], want)
	}
}

func TestTUIStatsNextPoll(t *testing.T) {
	s := New([]style.Style{style.Shell})
	st := s.Styles[style.Shell]
	if _, ok := st.NextPoll(); ok {
		t.Fatal("next poll known before any tick")
	}
	s.Apply(ev(0, style.Shell.Source("a"), trace.PollTick, style.Shell.Namespace(), "", trace.Poll{IntervalS: 5}))
	s.Apply(ev(600, style.Shell.Source("a"), trace.Kubectl, style.Shell.Namespace(), "", trace.Command{Verb: "get echoes"}))
	next, ok := st.NextPoll()
	if !ok || !next.Equal(at(5600)) {
		t.Fatalf("next poll = %v %v, want %v", next, ok, at(5600))
	}
}

func TestTUIReplicaOfIdentity(t *testing.T) {
	for id, want := range map[string]string{style.ClientGo.Identity("a", 4121): "a", style.Runtime.Identity("b", 7): "b", "odd": "odd"} {
		if got := ReplicaOfIdentity(id); got != want {
			t.Errorf("ReplicaOfIdentity(%q) = %q, want %q", id, got, want)
		}
	}
}

// TestTUIStatsConvergence: echo.converged is kept per Echo, creation and
// edit apart, and forgotten with the Echo; client.limits is kept; the
// reconciles under way are counted per replica.
func TestTUIStatsConvergence(t *testing.T) {
	cg, ns := style.ClientGo, style.ClientGo.Namespace()
	conv := func(ms int, name string, took float64, created bool) trace.Event {
		f := trace.Convergence{LatencyMS: took, Echo: name, Created: created}
		return ev(ms, trace.SourceWorld, trace.Converged, ns, "Echo/"+name, f)
	}
	rec := func(ms int, src string, kind trace.Kind, id int) trace.Event {
		return ev(ms, src, kind, ns, "Echo/x", trace.Reconcile{ID: id})
	}
	s := New([]style.Style{cg})
	for _, e := range []trace.Event{
		ev(1, cg.Source("a"), trace.ClientLimits, ns, "", trace.Limits{QPS: 5.0, Burst: 10}),
		conv(10, "hello", 1234, true),
		conv(11, "other", 800, true),
		conv(20, "hello", 45, false),
		ev(30, trace.SourceWorld, trace.EchoDeleted, ns, "Echo/other", nil),
		rec(40, cg.Source("a"), trace.ReconcileStart, 1),
		rec(41, cg.Source("a"), trace.ReconcileStart, 2),
		rec(42, cg.Source("b"), trace.ReconcileStart, 1),
		rec(43, cg.Source("a"), trace.ReconcileEnd, 1),
		ev(44, supervisor.Source, trace.ProcessExit, "", cg.Source("b"), trace.Process{PID: 9}),
	} {
		s.Apply(e)
	}
	st := s.Styles[cg]
	checks := []struct {
		name      string
		got, want any
	}{
		{"limit", *st.Limit, ClientLimit{QPS: 5, Burst: 10}},
		{"hello created", st.Converged["hello"].CreatedMS, 1234.0},
		{"hello edit", st.Converged["hello"].EditMS, 45.0},
		{"other forgotten", st.Converged["other"] == nil, true},
		{"created converged", st.CreatedConverged(), 1},
		{"in flight: a's 2 (b died)", st.InFlight(), 1},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestTUIStatsCustom: a student's operator is known from its proxy alone:
// its watch events by resource and the last one, the requests its Role
// denied; its requests move no pipeline marker (it has none).
func TestTUIStatsCustom(t *testing.T) {
	mine := style.Style("mine")
	ns, proxy := mine.Namespace(), "proxy/"+mine.Source("a")
	req := func(ms int, verb, resource string, code int) trace.Event {
		return ev(ms, proxy, trace.APIRequest, ns, "", trace.Request{Verb: verb, Resource: resource, Code: code})
	}
	watched := func(ms int, typ, resource, obj string) trace.Event {
		return ev(ms, proxy, trace.APIWatchEvent, ns, obj, trace.WatchEvent{Type: typ, Resource: resource})
	}
	s := New([]style.Style{style.ClientGo, mine})
	for _, e := range []trace.Event{
		req(0, "watch", "echoes", 200),
		watched(10, "ADDED", "echoes", "Echo/hello"),
		req(20, "patch", "deployments", 200),
		watched(30, "ADDED", "deployments", "Deployment/echo-hello"),
		watched(40, "MODIFIED", "deployments", "Deployment/echo-hello"),
		req(50, "list", "pods", 403),
		req(60, "get", "secrets", 403.0),     // as read back from JSON
		watched(5, "BOOKMARK", "echoes", ""), // late: not the last
	} {
		s.Apply(e)
	}
	st := s.Styles[mine]
	checks := []struct {
		name      string
		got, want any
	}{
		{"requests", st.APITotal, 4},
		{"watch events", st.Watch.N, 4},
		{"by resource", st.Watch.Resources(), []Count{{"deployments", 2}, {"echoes", 2}}},
		{"last", st.Watch.Last, WatchEvent{Type: "MODIFIED", Resource: "deployments", Object: "Deployment/echo-hello", At: at(40)}},
		{"denied", st.Denied, Denied{N: 2, Last: VerbKey{"get", "secrets"}, At: at(60)}},
		{"no marker", st.Stage, -1},
		{"client-go untouched", s.Styles[style.ClientGo].Watch.N, 0},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestTUIStatsByVerb: requests sum by verb and group by resource in the
// order a pane lists them (reads, watches, writes, then others by name).
func TestTUIStatsByVerb(t *testing.T) {
	counts := map[VerbKey]int{
		{"patch", "deployments"}: 3, {"get", "deployments"}: 3, {"watch", "deployments"}: 1,
		{"get", "echoes"}: 4, {"list", "echoes"}: 1, {"post", "/healthz"}: 1, {"delete", "pods"}: 1,
	}
	if got, want := ByVerb(counts), []Count{{"get", 7}, {"list", 1}, {"watch", 1}, {"patch", 3}, {"delete", 1}, {"post", 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("ByVerb = %v, want %v", got, want)
	}
	want := []Resource{
		{Name: "deployments", Total: 7, Verbs: []Count{{"get", 3}, {"watch", 1}, {"patch", 3}}},
		{Name: "echoes", Total: 5, Verbs: []Count{{"get", 4}, {"list", 1}}},
		{Name: "/healthz", Total: 1, Verbs: []Count{{"post", 1}}},
		{Name: "pods", Total: 1, Verbs: []Count{{"delete", 1}}},
	}
	if got := ByResource(counts); !reflect.DeepEqual(got, want) {
		t.Errorf("ByResource = %v, want %v", got, want)
	}
}

// What the student asks the apiserver (their proxy, trace.SourceYou) is no
// operator's cost, whatever namespace it names.
func TestTUIStatsYourRequests(t *testing.T) {
	s := New([]style.Style{style.ClientGo})
	for _, src := range []string{trace.SourceYou, "proxy/clientgo/a"} {
		s.Apply(trace.Event{Time: time.Unix(1, 0), Source: src, Kind: trace.APIRequest, Namespace: "echo-clientgo",
			Payload: trace.Request{Verb: "patch", Resource: "echoes", Code: 200}})
	}
	if got := s.Styles[style.ClientGo].Verbs[VerbKey{"patch", "echoes"}]; got != 1 {
		t.Errorf("clientgo's patch echoes = %d, want 1: the operator's only", got)
	}
}

// TestTUIStatsBatch: the last batch is the Echoes created within world.BatchGap
// of the batch's last convergence, timed from the first creation to the
// last convergence; edits converging are no batch's.
func TestTUIStatsBatch(t *testing.T) {
	cg, ns := style.ClientGo, style.ClientGo.Namespace()
	// conv is the world's report at ms of Echo name converged took ms
	// after it was created (or edited).
	type conv struct {
		ms      int
		name    string
		took    float64
		created bool
	}
	tests := []struct {
		name     string
		convs    []conv
		wantNil  bool
		wantN    int
		wantTook time.Duration
	}{
		{name: "nothing created", convs: []conv{{1000, "hello", 40, false}}, wantNil: true},
		{name: "one", convs: []conv{{1500, "a", 500, true}}, wantN: 1, wantTook: 500 * time.Millisecond},
		{name: "one apply, converging one after another", convs: []conv{
			{1500, "a-1", 500, true},  // created at 1 s
			{4000, "a-2", 2900, true}, // 1.1 s: after a-1 converged, within the gap
			{9000, "a-3", 7800, true}, // 1.2 s
		}, wantN: 3, wantTook: 8 * time.Second},
		{name: "an edit counts in no batch", convs: []conv{
			{1500, "a-1", 500, true}, {3000, "a-1", 100, false}, {4000, "a-2", 2900, true},
		}, wantN: 2, wantTook: 3 * time.Second},
		{name: "a second apply later starts a new batch", convs: []conv{
			{1500, "a-1", 500, true}, {2000, "a-2", 900, true},
			{20000, "b-1", 3000, true}, // created at 17 s, 15 s after a's last convergence
			{21000, "b-2", 3900, true},
		}, wantN: 2, wantTook: 4 * time.Second},
		{name: "created within the gap of the last convergence", convs: []conv{
			{2000, "a-1", 1000, true},
			{8000, "a-2", 1000, true}, // created at 7 s, 5 s after a-1 converged
		}, wantN: 2, wantTook: 7 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New([]style.Style{cg})
			for _, c := range tt.convs {
				f := trace.Convergence{LatencyMS: c.took, Echo: c.name, Created: c.created}
				s.Apply(ev(c.ms, trace.SourceWorld, trace.Converged, ns, "Echo/"+c.name, f))
			}
			b := s.Styles[cg].Batch
			if tt.wantNil {
				if b != nil {
					t.Fatalf("Batch = %+v, want none", *b)
				}
				return
			}
			if b == nil || b.N != tt.wantN || b.Took() != tt.wantTook {
				t.Fatalf("Batch = %+v, want %d Echoes in %s", b, tt.wantN, tt.wantTook)
			}
		})
	}
}

// TestTUIStatsStartup: rlab.startup says what is still starting until the
// last step, and an error stays.
func TestTUIStatsStartup(t *testing.T) {
	step := func(ms int, p trace.Startup) trace.Event {
		return ev(ms, trace.SourceRlab, trace.StartupStep, "", "", p)
	}
	tests := []struct {
		name     string
		evs      []trace.Event
		starting bool
		err      string
	}{
		{"no word: an old recording", nil, false, ""},
		{"serving", []trace.Event{step(0, trace.Startup{Done: "the apiserver serves", Next: "the operators"})}, true, ""},
		{"all started", []trace.Event{
			step(0, trace.Startup{Done: "the apiserver serves", Next: "the operators"}),
			step(1, trace.Startup{Done: "started"}),
		}, false, ""},
		{"failed", []trace.Event{
			step(0, trace.Startup{Done: "the apiserver serves", Next: "the operators"}),
			step(1, trace.Startup{Error: "kube-controller-manager exited"}),
		}, false, "kube-controller-manager exited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New([]style.Style{style.ClientGo})
			for _, e := range tt.evs {
				s.Apply(e)
			}
			if got := s.Startup.Starting(); got != tt.starting {
				t.Errorf("Starting() = %v, want %v (%+v)", got, tt.starting, s.Startup)
			}
			if s.Startup.Error != tt.err {
				t.Errorf("Error = %q, want %q", s.Startup.Error, tt.err)
			}
			if s.Styles[style.ClientGo].Events != 0 {
				t.Error("a start-up step was folded into an operator's pane")
			}
		})
	}
}
