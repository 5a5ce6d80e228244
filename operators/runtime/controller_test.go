package runtime

// In-process tests in the manner of sample-controller's controller_test.go,
// with controller-runtime's fake client: a fixture of objects, one
// Reconcile, then the calls it made. The cases are optest's, shared with
// the client-go operator; this file builds the controller-runtime one. The
// end-to-end behaviour (a real apiserver, garbage collector and kwok) is
// tested in sim/sandbox.

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/internal/optest"
)

// TestReconcile runs the cases the client-go operator passes too
// (TestReconcile/CreatesDeployment, ...) against the EchoReconciler.
func TestReconcile(t *testing.T) { optest.Harness{Style: Style, New: newOperator}.Run(t) }

// operator is the reconciler over one fake client, which serves as its
// cache and as the apiserver: only writes and APIReader's reads are calls.
type operator struct {
	t        *testing.T
	r        *EchoReconciler
	client   client.Client
	recorder *events.FakeRecorder
	calls    []string // "verb Kind[/status]"
}

func newOperator(t *testing.T, w optest.World) optest.Operator {
	t.Helper()
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := echov1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, e := range w.Echoes {
		objs = append(objs, e)
	}
	for _, d := range w.Deployments {
		objs = append(objs, d)
	}
	if w.Defaults != nil {
		objs = append(objs, w.Defaults)
	}
	o := &operator{t: t, recorder: events.NewFakeRecorder(10)}
	conflicts := w.StatusConflicts
	o.client = fake.NewClientBuilder().
		WithScheme(scheme).
		WithObjects(objs...).
		WithStatusSubresource(&echov1.Echo{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				o.record("create", obj, "")
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				o.record("update", obj, "")
				return c.Update(ctx, obj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				o.record("update", obj, sub)
				if conflicts > 0 {
					conflicts--
					return apierrors.NewConflict(echov1.Resource.GroupResource(), obj.GetName(), errConflict)
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).
		Build()
	o.r = &EchoReconciler{
		Client:     o.client,
		Scheme:     scheme,
		APIReader:  apiReader{o},
		Recorder:   o.recorder,
		Namespace:  Style.Namespace(),
		Image:      optest.Image,
		WatchOwned: true,
	}
	return o
}

func (o *operator) record(verb string, obj client.Object, sub string) {
	c := verb + " " + kindOf(obj)
	if sub != "" {
		c += "/" + sub
	}
	o.calls = append(o.calls, c)
}

// apiReader is the reconciler's APIReader: the same fake, its reads recorded.
type apiReader struct{ o *operator }

func (r apiReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.o.record("get", obj, "")
	return r.o.client.Get(ctx, key, obj, opts...)
}

func (r apiReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.o.calls = append(r.o.calls, "list")
	return r.o.client.List(ctx, list, opts...)
}

func (o *operator) Mapped(cm *corev1.ConfigMap) []string {
	var keys []string
	for _, req := range o.r.EchoesOf(context.Background(), cm) {
		keys = append(keys, req.String())
	}
	return keys
}

func (o *operator) Reconcile(name string) error {
	res, err := o.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: Style.Namespace(), Name: name}})
	if res != (ctrl.Result{}) {
		o.t.Errorf("result = %+v, want none: every retry comes from an error or an event", res)
	}
	return err
}

func (o *operator) Calls() []string { return o.calls }

func (o *operator) Deployment(name string) *appsv1.Deployment {
	o.t.Helper()
	d := &appsv1.Deployment{}
	if err := o.client.Get(context.Background(), client.ObjectKey{Namespace: Style.Namespace(), Name: name}, d); err != nil {
		o.t.Fatal(err)
	}
	return d
}

func (o *operator) Status(name string) echov1.EchoStatus {
	o.t.Helper()
	e := &echov1.Echo{}
	if err := o.client.Get(context.Background(), client.ObjectKey{Namespace: Style.Namespace(), Name: name}, e); err != nil {
		o.t.Fatal(err)
	}
	return e.Status
}

func (o *operator) Events() <-chan string { return o.recorder.Events }

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
