package stats

import (
	"reflect"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/trace"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func ev(ms int, source string, kind trace.Kind, ns, obj string, f map[string]any) trace.Event {
	return trace.Event{Time: at(ms), Source: source, Kind: kind, Namespace: ns, Object: obj, Fields: f}
}

func TestTUIStatsStage(t *testing.T) {
	tests := []struct {
		name  string
		style string
		ev    trace.Event
		stage string
	}{
		{"informer", "clientgo", ev(1, "clientgo/a", trace.InformerUpdate, "echo-clientgo", "Echo/hello", nil), "informer"},
		{"queue add", "runtime", ev(1, "runtime/b", trace.QueueAdd, "echo-runtime", "Echo/hello", map[string]any{"depth": 1}), "queue"},
		{"queue get", "runtime", ev(1, "runtime/b", trace.QueueGet, "echo-runtime", "Echo/hello", map[string]any{"depth": 0}), "reconcile"},
		{"reconcile start", "clientgo", ev(1, "clientgo/a", trace.ReconcileStart, "echo-clientgo", "Echo/hello", nil), "reconcile"},
		{"api create", "clientgo", ev(1, "proxy/clientgo/a", trace.APIRequest, "echo-clientgo", "", map[string]any{"verb": "create", "resource": "deployments"}), "API"},
		{"api watch", "clientgo", ev(1, "proxy/clientgo/a", trace.APIRequest, "echo-clientgo", "", map[string]any{"verb": "watch", "resource": "echoes"}), "watch"},
		{"lease renewal moves nothing", "clientgo", ev(1, "proxy/clientgo/a", trace.APIRequest, "echo-clientgo", "", map[string]any{"verb": "update", "resource": "leases"}), ""},
		{"poll tick", "shell", ev(1, "shell/a", trace.PollTick, "echo-shell", "", map[string]any{"interval_s": 5}), "poll"},
		{"kubectl get", "shell", ev(1, "shell/a", trace.Kubectl, "echo-shell", "", map[string]any{"verb": "get echoes"}), "get"},
		{"kubectl apply", "shell", ev(1, "shell/a", trace.Kubectl, "echo-shell", "", map[string]any{"verb": "apply deployments"}), "apply"},
		{"kubectl patch", "shell", ev(1, "shell/a", trace.Kubectl, "echo-shell", "", map[string]any{"verb": "patch echoes/status"}), "patch"},
		{"shell api is not a stage", "shell", ev(1, "proxy/shell/a", trace.APIRequest, "echo-shell", "", map[string]any{"verb": "get", "resource": "echoes"}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New([]string{"shell", "clientgo", "runtime"})
			s.Apply(tt.ev)
			st := s.Styles[tt.style]
			got := ""
			if st.Stage >= 0 {
				got = Stages(tt.style)[st.Stage]
			}
			if got != tt.stage {
				t.Fatalf("stage = %q, want %q", got, tt.stage)
			}
		})
	}
}

func TestTUIStatsFold(t *testing.T) {
	s := New([]string{"shell", "clientgo"})
	for _, e := range []trace.Event{
		ev(0, "supervisor", trace.ProcessStart, "", "clientgo/a", map[string]any{"pid": 11, "restarts": 0}),
		ev(0, "supervisor", trace.ProcessStart, "", "clientgo/b", map[string]any{"pid": 12, "restarts": 0}),
		ev(10, "clientgo/a", trace.LeaderAcquired, "echo-clientgo", "Lease/echo-operator", map[string]any{"identity": "clientgo-a-11"}),
		ev(100, "clientgo/a", trace.QueueAdd, "echo-clientgo", "Echo/hello", map[string]any{"depth": 1}),
		ev(101, "clientgo/a", trace.QueueAdd, "echo-clientgo", "Echo/hello", map[string]any{"depth": 2}),
		ev(102, "clientgo/a", trace.QueueGet, "echo-clientgo", "Echo/hello", map[string]any{"depth": 1}),
		ev(103, "clientgo/a", trace.ReconcileStart, "echo-clientgo", "Echo/hello", map[string]any{"cause": "event", "cause_event": "UPDATE Echo/hello", "causes": 2}),
		ev(110, "clientgo/a", trace.ReconcileEnd, "echo-clientgo", "Echo/hello", map[string]any{"result": "error", "duration_ms": 7.0, "error": "conflict"}),
		ev(111, "clientgo/a", trace.QueueRequeue, "echo-clientgo", "Echo/hello", map[string]any{"depth": 1, "reason": "error"}),
		ev(120, "proxy/clientgo/a", trace.APIRequest, "echo-clientgo", "", map[string]any{"verb": "list", "resource": "echoes"}),
		ev(61_000, "proxy/clientgo/a", trace.APIRequest, "echo-clientgo", "", map[string]any{"verb": "list", "resource": "echoes"}),
		ev(61_500, "proxy/clientgo/b", trace.APIRequest, "echo-clientgo", "", map[string]any{"verb": "get", "resource": "leases"}),
		ev(62_000, "world", trace.DriftDetected, "echo-clientgo", "Deployment/echo-hello", map[string]any{"what": "replicas"}),
		ev(62_021, "world", trace.DriftRepaired, "echo-clientgo", "Deployment/echo-hello", map[string]any{"what": "replicas", "latency_ms": 21.0}),
		ev(62_100, "world", trace.GCCollected, "echo-clientgo", "Pod/echo-hello-x", map[string]any{"owner": "ReplicaSet/echo-hello-1"}),
		ev(63_000, "supervisor", trace.ProcessExit, "", "clientgo/a", map[string]any{"pid": 11, "signal": "killed"}),
		ev(64_000, "world", trace.LeaderObserved, "echo-clientgo", "Lease/echo-operator", map[string]any{"identity": "clientgo-b-12"}),
		ev(64_000, "rlab", trace.Dropped, "", "", map[string]any{"count": 5}),
	} {
		s.Apply(e)
	}
	st := s.Styles["clientgo"]
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
		{"verbs", st.Verbs, map[string]int{"list echoes": 2, "get leases": 1}},
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

func TestTUIStatsSpark(t *testing.T) {
	s := New([]string{"runtime"})
	st := s.Styles["runtime"]
	if got := st.Spark(at(0)); got[SparkLen-1] != 0 || len(got) != SparkLen {
		t.Fatalf("empty spark = %v", got)
	}
	for _, e := range []trace.Event{
		ev(1000, "runtime/a", trace.QueueAdd, "echo-runtime", "", map[string]any{"depth": 1}),
		ev(1100, "runtime/a", trace.QueueAdd, "echo-runtime", "", map[string]any{"depth": 3}),
		ev(1200, "runtime/a", trace.QueueGet, "echo-runtime", "", map[string]any{"depth": 2}),
		ev(3000, "runtime/a", trace.QueueGet, "echo-runtime", "", map[string]any{"depth": 0}),
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
	s := New([]string{"shell"})
	st := s.Styles["shell"]
	if _, ok := st.NextPoll(); ok {
		t.Fatal("next poll known before any tick")
	}
	s.Apply(ev(0, "shell/a", trace.PollTick, "echo-shell", "", map[string]any{"interval_s": 5}))
	s.Apply(ev(600, "shell/a", trace.Kubectl, "echo-shell", "", map[string]any{"verb": "get echoes"}))
	next, ok := st.NextPoll()
	if !ok || !next.Equal(at(5600)) {
		t.Fatalf("next poll = %v %v, want %v", next, ok, at(5600))
	}
}

func TestTUIReplicaOfIdentity(t *testing.T) {
	for id, want := range map[string]string{"clientgo-a-4121": "a", "runtime-b-7": "b", "odd": "odd"} {
		if got := ReplicaOfIdentity(id); got != want {
			t.Errorf("ReplicaOfIdentity(%q) = %q, want %q", id, got, want)
		}
	}
}
