package instrument_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/echo/instrument"
	"github.com/kkloud/rlab/operators/internal/optest"
	"github.com/kkloud/rlab/operators/trace"
)

func ownedBy(echoName string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: echo.DeploymentName(echoName), Namespace: "ns",
		ResourceVersion: "1", OwnerReferences: []metav1.OwnerReference{echo.OwnerReference(echoName, "uid-1")}}}
}

// TestTracerCauses: each informer event, seen through the handler wrapper,
// is traced and becomes a cause of the next reconcile of the Echo it maps
// to; the operator's own handler still runs. (The controller-runtime
// predicate is tested in operators/runtime/crtrace.)
func TestTracerCauses(t *testing.T) {
	orphan := ownedBy("x")
	orphan.OwnerReferences = nil
	tests := []struct {
		name      string
		deliver   func(tr *instrument.Tracer, handled *int)
		wantField map[string]string // on the informer event
		wantCause string            // cause_event of the reconcile of ns/hello, "" for none
	}{
		{
			name: "Deployment update mapped to its Echo",
			deliver: func(tr *instrument.Tracer, handled *int) {
				old, cur := ownedBy("hello"), ownedBy("hello")
				cur.ResourceVersion = "2"
				tr.Handler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(any, any) { *handled++ }}).OnUpdate(old, cur)
			},
			wantField: map[string]string{"resource": "Deployment", "mapped_to": "Echo/hello", "change": "status"},
			wantCause: "UPDATE Deployment/echo-hello → Echo/hello",
		},
		{
			name: "Deployment nobody controls is traced, not a cause",
			deliver: func(tr *instrument.Tracer, handled *int) {
				tr.Handler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { *handled++ }}).OnAdd(orphan, false)
			},
			wantField: map[string]string{"resource": "Deployment", "initial": "false"},
		},
		{
			name: "tombstone of a deleted Deployment",
			deliver: func(tr *instrument.Tracer, handled *int) {
				tr.Handler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) { *handled++ }}).
					OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/echo-hello", Obj: ownedBy("hello")})
			},
			wantField: map[string]string{"mapped_to": "Echo/hello"},
			wantCause: "DELETE Deployment/echo-hello → Echo/hello",
		},
		{
			name: "ConfigMap mapped to every Echo by the operator's map function",
			deliver: func(tr *instrument.Tracer, handled *int) {
				old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: echo.DefaultsName, Namespace: "ns", ResourceVersion: "1"}}
				cur := old.DeepCopy()
				cur.ResourceVersion = "2"
				keys := func(any) []string { return []string{"ns/blank", "ns/hello"} }
				tr.Mapped(keys).Handler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(any, any) { *handled++ }}).OnUpdate(old, cur)
			},
			wantField: map[string]string{"resource": "ConfigMap", "mapped_to": "Echo/blank, Echo/hello"},
			wantCause: "UPDATE ConfigMap/echo-defaults → Echo/blank, Echo/hello",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handled := 0
			evs := optest.Traced(t, func(tr *instrument.Tracer) {
				tt.deliver(tr, &handled)
				_ = tr.Reconcile(context.Background(), "ns/hello", func(context.Context, string) error { return nil })
			})
			if handled != 1 {
				t.Errorf("the operator's handler ran %d times, want 1", handled)
			}
			if len(evs) != 3 || !strings.HasPrefix(string(evs[0].Kind), "informer.") {
				t.Fatalf("events %+v, want informer, reconcile.start, reconcile.end", evs)
			}
			for k, v := range tt.wantField {
				if got := optest.Wire(evs[0], k); got != v {
					t.Errorf("informer event %s = %q, want %q", k, got, v)
				}
			}
			start := evs[1]
			if got := trace.As[trace.Reconcile](start).CauseEvent; got != tt.wantCause {
				t.Errorf("reconcile cause_event = %q, want %q", got, tt.wantCause)
			}
			if tt.wantCause == "" && trace.As[trace.Reconcile](start).Cause != trace.CauseResync {
				t.Errorf("a reconcile nothing traced is a %q, want %q", trace.As[trace.Reconcile](start).Cause, trace.CauseResync)
			}
		})
	}
}

// TestTracerReconcile: start and end carry what the reconcile reported
// through its context, and an error is the end's result.
func TestTracerReconcile(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name                          string
		reconcile                     func(ctx context.Context) error
		wantResult, wantChanged, want string // want: status
		wantErr                       error
		wantFinalizer                 bool
	}{
		{"created", func(ctx context.Context) error {
			instrument.ReportChanged(ctx, "created")
			instrument.ReportStatus(ctx, "0/2")
			return nil
		}, trace.ResultOK, "created", "0/2", nil, false},
		{"nothing reported", func(context.Context) error { return nil }, trace.ResultOK, trace.ChangedNone, "", nil, false},
		{"failed", func(ctx context.Context) error {
			instrument.ReportFinalizer(ctx, "added")
			return boom
		}, trace.ResultError, trace.ChangedNone, "", boom, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			evs := optest.Traced(t, func(tr *instrument.Tracer) {
				err = tr.Reconcile(context.Background(), "ns/hello", func(ctx context.Context, key string) error {
					if key != "ns/hello" {
						t.Errorf("key %q", key)
					}
					return tt.reconcile(ctx)
				})
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			end := optest.Ended(t, evs)
			for k, want := range map[string]string{"result": tt.wantResult, "changed": tt.wantChanged, "status": tt.want} {
				if got := optest.Wire(end, k); got != want {
					t.Errorf("end %s = %q, want %q", k, got, want)
				}
			}
			if tt.wantErr != nil && trace.As[trace.Reconcile](end).Error != tt.wantErr.Error() {
				t.Errorf("end error = %q", trace.As[trace.Reconcile](end).Error)
			}
			found := false
			for _, e := range evs {
				found = found || (e.Kind == trace.Finalizer && trace.As[trace.FinalizerChange](e).Action == "added" && e.Object == "Echo/hello")
			}
			if found != tt.wantFinalizer {
				t.Errorf("finalizer event seen: %v, want %v", found, tt.wantFinalizer)
			}
		})
	}
}
