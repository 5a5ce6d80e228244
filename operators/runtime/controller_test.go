package runtime

// In-process tests in the manner of sample-controller's controller_test.go,
// with controller-runtime's fake client: a fixture of objects, one
// Reconcile, then the writes it made. The end-to-end behaviour (a real
// apiserver, garbage collector and kwok) is tested in sim/sandbox.

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
)

const ns = "echo-runtime"

// image is the one the reconciler is given: not the default, so that a
// Deployment carrying the default is visibly someone else's.
const image = "rlab.local/echo-server:v1"

// fixture is the world one Reconcile sees, and what it wrote.
type fixture struct {
	t       *testing.T
	objects []client.Object
	// conflicts is how many status updates answer 409 before one succeeds.
	conflicts int

	client   client.Client
	recorder *events.FakeRecorder
	writes   []string // "verb kind[/status]"
}

func newFixture(t *testing.T) *fixture { return &fixture{t: t} }

func (f *fixture) newReconciler() *EchoReconciler {
	f.t.Helper()
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		f.t.Fatal(err)
	}
	if err := echov1.AddToScheme(scheme); err != nil {
		f.t.Fatal(err)
	}
	record := func(verb string, obj client.Object) {
		f.writes = append(f.writes, verb+" "+kindOf(obj))
	}
	f.client = fake.NewClientBuilder().
		WithScheme(scheme).
		WithObjects(f.objects...).
		WithStatusSubresource(&echov1.Echo{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				record("create", obj)
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				record("update", obj)
				return c.Update(ctx, obj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				record("update", obj)
				f.writes[len(f.writes)-1] += "/" + sub
				if f.conflicts > 0 {
					f.conflicts--
					return apierrors.NewConflict(echov1.Resource.GroupResource(), obj.GetName(), errConflict)
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).
		Build()
	f.recorder = events.NewFakeRecorder(10)
	return &EchoReconciler{
		Client:     f.client,
		Scheme:     scheme,
		APIReader:  f.client,
		Recorder:   f.recorder,
		Namespace:  ns,
		Image:      image,
		WatchOwned: true,
	}
}

// run reconciles ns/name once.
func (f *fixture) run(r *EchoReconciler, name string) error {
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	if res != (ctrl.Result{}) {
		f.t.Errorf("result = %+v, want none: every retry comes from an error or an event", res)
	}
	return err
}

func (f *fixture) deployment(name string) *appsv1.Deployment {
	f.t.Helper()
	d := &appsv1.Deployment{}
	if err := f.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fixture) status(name string) string {
	f.t.Helper()
	e := &echov1.Echo{}
	if err := f.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, e); err != nil {
		f.t.Fatal(err)
	}
	return e.Status.Ready
}

func newEcho(name string, replicas int32, ready string) *echov1.Echo {
	return &echov1.Echo{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), Generation: 1},
		Spec:       echov1.EchoSpec{Message: "hi", Replicas: replicas},
		Status:     echov1.EchoStatus{Ready: ready},
	}
}

// ownedDeployment is what the operator would create for e, with readyReplicas.
func ownedDeployment(e *echov1.Echo, ready int32) *appsv1.Deployment {
	d := echo.DesiredDeployment(e, Style.ManagedBy(), image)
	d.CreationTimestamp = metav1.Now() // the apiserver's; the fake leaves it empty
	d.Status.ReadyReplicas = ready
	return d
}

func TestCreatesDeployment(t *testing.T) {
	f := newFixture(t)
	e := newEcho("hello", 2, "")
	f.objects = append(f.objects, e)
	r := f.newReconciler()

	if err := f.run(r, "hello"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"create Deployment", "update Echo/status"}; !equal(f.writes, want) {
		t.Fatalf("writes = %v, want %v", f.writes, want)
	}
	d := f.deployment("echo-hello")
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Args[0] != "-text=hi" {
		t.Errorf("created %d replicas with args %v, want 2 and -text=hi", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Args)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Errorf("image = %q, want the configured %q", got, image)
	}
	if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != e.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("ownerReferences = %+v, want a blocking controller reference to uid %s", d.OwnerReferences, e.UID)
	}
	if got := f.status("hello"); got != "0/2" {
		t.Errorf("status.ready = %q, want 0/2", got)
	}
}

func TestNotControlledByUs(t *testing.T) {
	for _, tt := range []struct {
		name  string
		owner *echov1.Echo // nil: a Deployment nobody controls
	}{
		{"no owner", nil},
		{"another Echo", newEcho("other", 1, "")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			e := newEcho("hello", 2, "")
			theirs := ownedDeployment(e, 0)
			theirs.OwnerReferences = nil
			theirs.Spec.Replicas = ptr.To[int32](7)
			if tt.owner != nil {
				theirs.OwnerReferences = []metav1.OwnerReference{echo.OwnerReference(tt.owner.Name, tt.owner.UID)}
			}
			f.objects = append(f.objects, e, theirs)
			r := f.newReconciler()

			err := f.run(r, "hello")
			if err == nil || !strings.Contains(err.Error(), "not controlled by Echo") {
				t.Fatalf("reconcile error = %v, want it to say the Deployment is not controlled by the Echo", err)
			}
			if len(f.writes) != 0 {
				t.Errorf("writes = %v, want none: the Deployment is not ours to change", f.writes)
			}
			if d := f.deployment("echo-hello"); *d.Spec.Replicas != 7 || len(d.OwnerReferences) != len(theirs.OwnerReferences) {
				t.Errorf("Deployment changed: replicas %d, owners %+v", *d.Spec.Replicas, d.OwnerReferences)
			}
			select {
			case ev := <-f.recorder.Events:
				if !strings.HasPrefix(ev, "Warning "+echo.ReasonNotControlled+" ") {
					t.Errorf("event %q, want a Warning %s", ev, echo.ReasonNotControlled)
				}
			default:
				t.Error("no Event recorded on the Echo")
			}
		})
	}
}

func TestRepairsDrift(t *testing.T) {
	for _, tt := range []struct {
		name     string
		edit     func(d *appsv1.Deployment) // by hand
		repaired func(d *appsv1.Deployment) bool
	}{
		{"scaled by hand",
			func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](1) },
			func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 3 }},
		{"image changed by hand",
			func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = echo.DefaultImage },
			func(d *appsv1.Deployment) bool { return d.Spec.Template.Spec.Containers[0].Image == image }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			e := newEcho("hello", 3, "1/1")
			d := ownedDeployment(e, 1)
			tt.edit(d)
			f.objects = append(f.objects, e, d)
			r := f.newReconciler()

			if err := f.run(r, "hello"); err != nil {
				t.Fatal(err)
			}
			if want := []string{"update Deployment", "update Echo/status"}; !equal(f.writes, want) {
				t.Fatalf("writes = %v, want %v", f.writes, want)
			}
			if got := f.deployment("echo-hello"); !tt.repaired(got) {
				t.Errorf("not repaired: replicas %d, image %q", *got.Spec.Replicas, got.Spec.Template.Spec.Containers[0].Image)
			}
			if got := f.status("hello"); got != "1/3" {
				t.Errorf("status.ready = %q, want 1/3", got)
			}
		})
	}
}

func TestInSyncWritesNothing(t *testing.T) {
	f := newFixture(t)
	e := newEcho("hello", 2, "2/2")
	f.objects = append(f.objects, e, ownedDeployment(e, 2))
	r := f.newReconciler()

	if err := f.run(r, "hello"); err != nil {
		t.Fatal(err)
	}
	if len(f.writes) != 0 {
		t.Errorf("writes = %v, want none", f.writes)
	}
}

func TestStatusConflictRetried(t *testing.T) {
	f := newFixture(t)
	e := newEcho("hello", 2, "")
	f.objects = append(f.objects, e, ownedDeployment(e, 2))
	f.conflicts = 1 // someone else writes the Echo first
	r := f.newReconciler()

	if err := f.run(r, "hello"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"update Echo/status", "update Echo/status"}; !equal(f.writes, want) {
		t.Fatalf("writes = %v, want %v", f.writes, want)
	}
	if got := f.status("hello"); got != "2/2" {
		t.Errorf("status.ready = %q, want 2/2", got)
	}
}

var errConflict = conflictError("the object has been modified")

type conflictError string

func (e conflictError) Error() string { return string(e) }

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	case *echov1.Echo:
		return echov1.Kind
	}
	return obj.GetObjectKind().GroupVersionKind().Kind
}

func equal(a, b []string) bool { return strings.Join(a, "|") == strings.Join(b, "|") }
