package crtrace

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo/instrument"
	"github.com/kkloud/rlab/operators/internal/optest"
	"github.com/kkloud/rlab/operators/trace"
)

var hello = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "hello"}}

// TestPredicate: an event the predicate sees is let through, traced, and
// the cause of the next reconcile of its Echo.
func TestPredicate(t *testing.T) {
	passed := false
	evs := optest.Traced(t, func(tr *instrument.Tracer) {
		e := &echov1.Echo{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns"}}
		passed = Predicate(tr).Create(event.CreateEvent{Object: e, IsInInitialList: true})
		_ = tr.Reconcile(context.Background(), "ns/hello", func(context.Context, string) error { return nil })
	})
	if !passed {
		t.Error("the predicate filtered the event out")
	}
	if len(evs) != 3 || evs[0].Kind != trace.InformerAdd {
		t.Fatalf("events %+v, want informer.add, reconcile.start, reconcile.end", evs)
	}
	if got := evs[0].Resource() + " " + strconv.FormatBool(trace.As[trace.Informer](evs[0]).Initial); got != echov1.Kind+" true" {
		t.Errorf("informer event resource, initial = %q, want %q", got, echov1.Kind+" true")
	}
	if got := trace.As[trace.Reconcile](evs[1]).CauseEvent; got != "ADD Echo/hello" {
		t.Errorf("reconcile cause_event = %q, want %q", got, "ADD Echo/hello")
	}
}

// TestPredicateFiltered: with GenerationChangedPredicate, an update that
// leaves the generation as it was (a status write) is stopped and traced as
// filtered, and is no cause of the next reconcile; one that moves it passes.
func TestPredicateFiltered(t *testing.T) {
	old := &echov1.Echo{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", Generation: 1}}
	statusOnly := old.DeepCopy()
	statusOnly.Status.Ready = "1/1"
	specChange := old.DeepCopy()
	specChange.Generation = 2
	tests := []struct {
		name         string
		obj          *echov1.Echo
		pass         bool
		change       string
		wantCause    string
		wantCauseLen float64
	}{
		{"status write", statusOnly, false, "status", "", 0},
		{"spec change", specChange, true, "spec", "UPDATE Echo/hello", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var passed bool
			evs := optest.Traced(t, func(tr *instrument.Tracer) {
				p := Predicate(tr, predicate.GenerationChangedPredicate{})
				passed = p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: tc.obj})
				_ = tr.Reconcile(context.Background(), "ns/hello", func(context.Context, string) error { return nil })
			})
			if passed != tc.pass {
				t.Fatalf("passed %v, want %v", passed, tc.pass)
			}
			if len(evs) != 3 || evs[0].Kind != trace.InformerUpdate {
				t.Fatalf("events %+v, want informer.update, reconcile.start, reconcile.end", evs)
			}
			if trace.As[trace.Informer](evs[0]).Filtered == tc.pass || trace.As[trace.Informer](evs[0]).Change != tc.change {
				t.Errorf("informer.update filtered=%v change=%q, want filtered=%v change=%q", trace.As[trace.Informer](evs[0]).Filtered, trace.As[trace.Informer](evs[0]).Change, !tc.pass, tc.change)
			}
			if n := trace.As[trace.Reconcile](evs[1]).Causes; trace.As[trace.Reconcile](evs[1]).CauseEvent != tc.wantCause || float64(n) != tc.wantCauseLen {
				t.Errorf("reconcile cause_event %q causes %v, want %q %v", trace.As[trace.Reconcile](evs[1]).CauseEvent, n, tc.wantCause, tc.wantCauseLen)
			}
		})
	}
}

// TestTraced: the wrapped Reconciler runs between reconcile.start and
// reconcile.end, which carries what it reported; its result and error
// pass through.
func TestTraced(t *testing.T) {
	boom := errors.New("boom")
	var (
		res reconcile.Result
		err error
	)
	evs := optest.Traced(t, func(tr *instrument.Tracer) {
		r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			if req != hello {
				t.Errorf("request %v, want %v", req, hello)
			}
			instrument.ReportChanged(ctx, "created")
			return reconcile.Result{RequeueAfter: time.Second}, boom
		})
		res, err = Traced(tr, r).Reconcile(context.Background(), hello)
	})
	if !errors.Is(err, boom) || res.RequeueAfter != time.Second {
		t.Fatalf("result %+v, err %v: want the Reconciler's own", res, err)
	}
	end := optest.Ended(t, evs)
	if trace.As[trace.Reconcile](end).Result != trace.ResultError || trace.As[trace.Reconcile](end).Changed != "created" {
		t.Errorf("end result = %q, changed = %q", trace.As[trace.Reconcile](end).Result, trace.As[trace.Reconcile](end).Changed)
	}
}

// TestRequestQueue: the queue keys requests as namespace/name, so an add
// names its Echo.
func TestRequestQueue(t *testing.T) {
	evs := optest.Traced(t, func(tr *instrument.Tracer) {
		q := RequestQueue(tr)("echo", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		q.Add(hello)
	})
	if len(evs) != 1 || evs[0].Kind != trace.QueueAdd || evs[0].Object != "Echo/hello" || trace.As[trace.Queue](evs[0]).Key != "ns/hello" {
		t.Fatalf("events %+v, want one queue.add of ns/hello about Echo/hello", evs)
	}
}
