package echo

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/simtest"
)

// traced runs f with a tracer over namespace ns and returns what it emitted.
func traced(t *testing.T, f func(tr *Tracer)) []trace.Event {
	t.Helper()
	out := &simtest.Buffer{}
	em := NewEmitter(out, "clientgo/a")
	f(NewTracer(em, "ns", slog.New(slog.NewTextHandler(io.Discard, nil))))
	em.Close()
	var evs []trace.Event
	if err := trace.Decode(strings.NewReader(out.String()), func(e trace.Event) {
		if err := trace.CheckSchema(e); err != nil {
			t.Errorf("tracer event off the schema: %v", err)
		}
		evs = append(evs, e)
	}, func(l string) { t.Fatalf("malformed %q", l) }); err != nil {
		t.Fatal(err)
	}
	return evs
}

func ownedBy(echoName string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: DeploymentName(echoName), Namespace: "ns",
		ResourceVersion: "1", OwnerReferences: []metav1.OwnerReference{OwnerReference(echoName, "uid-1")}}}
}

// TestTracerCauses: each informer event, seen through the handler wrapper
// (client-go) or the predicate (controller-runtime), is traced and becomes
// a cause of the next reconcile of the Echo it maps to; the operator's own
// handler still runs.
func TestTracerCauses(t *testing.T) {
	orphan := ownedBy("x")
	orphan.OwnerReferences = nil
	tests := []struct {
		name      string
		deliver   func(tr *Tracer, handled *int)
		wantField map[string]string // on the informer event
		wantCause string            // cause_event of the reconcile of ns/hello, "" for none
	}{
		{
			name: "handler: Deployment update mapped to its Echo",
			deliver: func(tr *Tracer, handled *int) {
				old, cur := ownedBy("hello"), ownedBy("hello")
				cur.ResourceVersion = "2"
				tr.Handler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(any, any) { *handled++ }}).OnUpdate(old, cur)
			},
			wantField: map[string]string{trace.FieldResource: "Deployment", trace.FieldMappedTo: "Echo/hello", trace.FieldChange: "status"},
			wantCause: "UPDATE Deployment/echo-hello → Echo/hello",
		},
		{
			name: "handler: Deployment nobody controls is traced, not a cause",
			deliver: func(tr *Tracer, handled *int) {
				tr.Handler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { *handled++ }}).OnAdd(orphan, false)
			},
			wantField: map[string]string{trace.FieldResource: "Deployment", trace.FieldInitial: "false"},
		},
		{
			name: "handler: tombstone of a deleted Deployment",
			deliver: func(tr *Tracer, handled *int) {
				tr.Handler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) { *handled++ }}).
					OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/echo-hello", Obj: ownedBy("hello")})
			},
			wantField: map[string]string{trace.FieldMappedTo: "Echo/hello"},
			wantCause: "DELETE Deployment/echo-hello → Echo/hello",
		},
		{
			name: "predicate: Echo listed at start",
			deliver: func(tr *Tracer, handled *int) {
				e := &echov1.Echo{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns"}}
				if tr.Predicate().Create(event.CreateEvent{Object: e, IsInInitialList: true}) {
					*handled++
				}
			},
			wantField: map[string]string{trace.FieldResource: echov1.Kind, trace.FieldInitial: "true"},
			wantCause: "ADD Echo/hello",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handled := 0
			evs := traced(t, func(tr *Tracer) {
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
				if got := evs[0].Str(k); got != v {
					t.Errorf("informer event %s = %q, want %q", k, got, v)
				}
			}
			start := evs[1]
			if got := start.Str(trace.FieldCauseEvent); got != tt.wantCause {
				t.Errorf("reconcile cause_event = %q, want %q", got, tt.wantCause)
			}
			if tt.wantCause == "" && start.Str(trace.FieldCause) != trace.CauseResync {
				t.Errorf("a reconcile nothing traced is a %q, want %q", start.Str(trace.FieldCause), trace.CauseResync)
			}
		})
	}
}

// TestTracerReconcile: start and end carry what the reconcile reported
// through its context, an error is the end's result, and Traced does the
// same for a controller-runtime Reconciler.
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
			ReportChanged(ctx, "created")
			ReportStatus(ctx, "0/2")
			return nil
		}, trace.ResultOK, "created", "0/2", nil, false},
		{"nothing reported", func(context.Context) error { return nil }, trace.ResultOK, trace.ChangedNone, "", nil, false},
		{"failed", func(ctx context.Context) error {
			ReportFinalizer(ctx, "added")
			return boom
		}, trace.ResultError, trace.ChangedNone, "", boom, true},
	}
	for _, tt := range tests {
		for _, via := range []string{"Reconcile", "Traced"} {
			t.Run(tt.name+" via "+via, func(t *testing.T) {
				var err error
				evs := traced(t, func(tr *Tracer) {
					if via == "Reconcile" {
						err = tr.Reconcile(context.Background(), "ns/hello", func(ctx context.Context, key string) error {
							if key != "ns/hello" {
								t.Errorf("key %q", key)
							}
							return tt.reconcile(ctx)
						})
						return
					}
					r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
						return reconcile.Result{}, tt.reconcile(ctx)
					})
					_, err = tr.Traced(r).Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "hello"}})
				})
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				end := evs[len(evs)-1]
				if end.Kind != trace.ReconcileEnd || end.Object != "Echo/hello" {
					t.Fatalf("last event %+v, want reconcile.end about Echo/hello", end)
				}
				for k, want := range map[string]string{trace.FieldResult: tt.wantResult, trace.FieldChanged: tt.wantChanged, trace.FieldStatus: tt.want} {
					if got := end.Str(k); got != want {
						t.Errorf("end %s = %q, want %q", k, got, want)
					}
				}
				if tt.wantErr != nil && end.Str(trace.FieldError) != tt.wantErr.Error() {
					t.Errorf("end error = %q", end.Str(trace.FieldError))
				}
				found := false
				for _, e := range evs {
					found = found || (e.Kind == trace.Finalizer && e.Str(trace.FieldAction) == "added" && e.Object == "Echo/hello")
				}
				if found != tt.wantFinalizer {
					t.Errorf("finalizer event seen: %v, want %v", found, tt.wantFinalizer)
				}
			})
		}
	}
}
