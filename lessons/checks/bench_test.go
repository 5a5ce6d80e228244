package checks

import (
	"fmt"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
)

// BenchmarkCheckEval is one evaluation of a three-condition check over a
// step that has run for about ten minutes (10,000 events, most of them
// Lease renewals), indexed by kind as the Player keeps them: the screen
// does four a second while a student reads.
func BenchmarkCheckEval(b *testing.B) {
	evs := make([]trace.Event, 0, 10000)
	for i := range 10000 {
		st := style.All()[i%3]
		e := ev(i*60, "proxy/"+st.Source("a"), trace.APIRequest, st.Namespace(), "", trace.Request{Verb: "update", Resource: "leases", Code: 200})
		if i%50 == 0 {
			e = ev(i*60, st.Source("a"), trace.ReconcileStart, st.Namespace(), "Echo/hello", trace.Reconcile{Cause: "event", ID: i})
		}
		evs = append(evs, e)
	}
	byKind := map[trace.Kind][]trace.Event{}
	for _, e := range evs {
		byKind[e.Kind] = append(byKind[e.Kind], e)
	}
	v := View{Snapshot: snapshot("2/2", 2, "Echo/hello"), Events: evs, ByKind: byKind, Began: t0, Acted: t0.Add(time.Second), Now: at(600000)}
	c := &lessons.Check{Within: time.Minute, Conds: []lessons.Cond{
		{Kind: "noticed", Args: Args{"style": "all", "name": "hello"}, Line: 0},
		{Kind: "deployment_replicas", Args: Args{"style": "all", "name": "hello", "replicas": 4, "ready": true}, Line: 0},
		{Kind: "api_requests", Args: Args{"style": "go", "verbs": []string{"update"}, "resource": "echoes/status", "code": 409, "min": 1}, Line: 0},
	}}
	b.ReportAllocs()
	var o Outcome
	for b.Loop() {
		o = Eval(c, v)
	}
	if o.OK {
		b.Fatal(fmt.Sprintf("passed: %+v", o))
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/eval")
}
