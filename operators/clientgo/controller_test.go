package clientgo

// In-process tests in the manner of sample-controller's controller_test.go:
// a fixture of objects in the informers' caches and the fake clients, one
// reconcile, then the writes it made. The end-to-end behaviour (a real
// apiserver, garbage collector and kwok) is tested in sim/sandbox.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
)

// fixture is the world one reconcile sees: the Echoes and Deployments in
// the caches (and in the fake apiservers, which serve the writes).
type fixture struct {
	t           *testing.T
	echoes      []*echov1.Echo
	deployments []*appsv1.Deployment

	kube     *kubefake.Clientset
	dyn      *dynamicfake.FakeDynamicClient
	recorder *record.FakeRecorder
}

func newFixture(t *testing.T) *fixture { return &fixture{t: t} }

// newController builds the controller over fake clients, with the fixture's
// objects put straight into the informers' indexers (no informer runs).
func (f *fixture) newController() *Controller {
	f.t.Helper()
	scheme := runtime.NewScheme()
	if err := echov1.AddToScheme(scheme); err != nil {
		f.t.Fatal(err)
	}
	var echoObjs, kubeObjs []runtime.Object
	for _, e := range f.echoes {
		echoObjs = append(echoObjs, toUnstructured(f.t, e))
	}
	for _, d := range f.deployments {
		kubeObjs = append(kubeObjs, d)
	}
	f.kube = kubefake.NewClientset(kubeObjs...)
	f.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{echov1.Resource: "EchoList"})
	for _, o := range echoObjs {
		// By resource: the tracker would guess "echos" from the kind.
		if err := f.dyn.Tracker().Create(echov1.Resource, o, ns); err != nil {
			f.t.Fatal(err)
		}
	}
	f.recorder = record.NewFakeRecorder(10)

	kubeInformers := informers.NewSharedInformerFactory(f.kube, 0)
	echoInformers := dynamicinformer.NewDynamicSharedInformerFactory(f.dyn, 0)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := NewController(f.kube, f.dyn, ns, image, kubeInformers, echoInformers, f.recorder,
		true, false, echo.NewTracer(echo.NewEmitter(nil, "test"), ns, log), log)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, o := range echoObjs {
		if err := echoInformers.ForResource(echov1.Resource).Informer().GetIndexer().Add(o); err != nil {
			f.t.Fatal(err)
		}
	}
	for _, d := range f.deployments {
		if err := kubeInformers.Apps().V1().Deployments().Informer().GetIndexer().Add(d); err != nil {
			f.t.Fatal(err)
		}
	}
	return c
}

// run reconciles ns/name once and returns its error.
func (f *fixture) run(c *Controller, name string) error {
	return c.reconcile(context.Background(), ns+"/"+name)
}

// writes lists the writes both fake apiservers received, as
// "verb resource[/subresource]"; reads are left out.
func (f *fixture) writes() []string {
	var out []string
	for _, a := range append(f.kube.Actions(), f.dyn.Actions()...) {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		w := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			w += "/" + a.GetSubresource()
		}
		out = append(out, w)
	}
	return out
}

const ns = "echo-clientgo"

// image is the one the controller is given: not the default, so that a
// Deployment carrying the default is visibly someone else's.
const image = "rlab.local/echo-server:v1"

func newEcho(name string, replicas int32, ready string) *echov1.Echo {
	return &echov1.Echo{
		TypeMeta:   metav1.TypeMeta{APIVersion: echov1.GroupVersion.String(), Kind: echov1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), ResourceVersion: "1", Generation: 1},
		Spec:       echov1.EchoSpec{Message: "hi", Replicas: replicas},
		Status:     echov1.EchoStatus{Ready: ready},
	}
}

// ownedDeployment is what the operator would create for e, with readyReplicas.
func ownedDeployment(e *echov1.Echo, ready int32) *appsv1.Deployment {
	d := echo.DesiredDeployment(e, Style.ManagedBy(), image)
	d.ResourceVersion = "1"
	d.Status.ReadyReplicas = ready
	return d
}

func TestCreatesDeployment(t *testing.T) {
	f := newFixture(t)
	e := newEcho("hello", 2, "")
	f.echoes = append(f.echoes, e)
	c := f.newController()

	if err := f.run(c, "hello"); err != nil {
		t.Fatal(err)
	}
	want := []string{"create deployments", "update echoes/status"}
	if got := f.writes(); !equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	d, err := f.kube.AppsV1().Deployments(ns).Get(context.Background(), "echo-hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Args[0] != "-text=hi" {
		t.Errorf("created %d replicas with args %v, want 2 and -text=hi", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Args)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Errorf("image = %q, want the configured %q", got, image)
	}
	if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != e.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("ownerReferences = %+v, want a blocking controller reference to uid %s", d.OwnerReferences, e.UID)
	}
	if got := statusOf(t, f, "hello"); got != "0/2" {
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
			f.echoes, f.deployments = append(f.echoes, e), append(f.deployments, theirs)
			c := f.newController()

			err := f.run(c, "hello")
			if err == nil || !strings.Contains(err.Error(), "not controlled by Echo") {
				t.Fatalf("reconcile error = %v, want it to say the Deployment is not controlled by the Echo", err)
			}
			if got := f.writes(); len(got) != 0 {
				t.Errorf("writes = %v, want none: the Deployment is not ours to change", got)
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
			f.echoes, f.deployments = append(f.echoes, e), append(f.deployments, d)
			c := f.newController()

			if err := f.run(c, "hello"); err != nil {
				t.Fatal(err)
			}
			want := []string{"update deployments", "update echoes/status"}
			if got := f.writes(); !equal(got, want) {
				t.Fatalf("writes = %v, want %v", got, want)
			}
			got, err := f.kube.AppsV1().Deployments(ns).Get(context.Background(), "echo-hello", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.repaired(got) {
				t.Errorf("not repaired: replicas %d, image %q", *got.Spec.Replicas, got.Spec.Template.Spec.Containers[0].Image)
			}
			if s := statusOf(t, f, "hello"); s != "1/3" {
				t.Errorf("status.ready = %q, want 1/3", s)
			}
		})
	}
}

func TestInSyncWritesNothing(t *testing.T) {
	f := newFixture(t)
	e := newEcho("hello", 2, "2/2")
	f.echoes, f.deployments = append(f.echoes, e), append(f.deployments, ownedDeployment(e, 2))
	c := f.newController()

	if err := f.run(c, "hello"); err != nil {
		t.Fatal(err)
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("writes = %v, want none", got)
	}
}

func TestStatusConflictRetried(t *testing.T) {
	f := newFixture(t)
	e := newEcho("hello", 2, "")
	f.echoes, f.deployments = append(f.echoes, e), append(f.deployments, ownedDeployment(e, 2))
	c := f.newController()
	// Someone else writes the Echo first: the first status update is a 409.
	conflicts := 0
	f.dyn.PrependReactor("update", "echoes", func(a core.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && conflicts == 0 {
			conflicts++
			return true, nil, apierrors.NewConflict(echov1.Resource.GroupResource(), "hello", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})

	if err := f.run(c, "hello"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range f.dyn.Actions() {
		got = append(got, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
	}
	// The retry reads the Echo from the apiserver, not from the cache that
	// may still hold the version that conflicted.
	want := []string{"update echoes/status", "get echoes/", "update echoes/status"}
	if !equal(got, want) {
		t.Fatalf("echo calls = %v, want %v", got, want)
	}
	if s := statusOf(t, f, "hello"); s != "2/2" {
		t.Errorf("status.ready = %q, want 2/2", s)
	}
}

func statusOf(t *testing.T, f *fixture, name string) string {
	t.Helper()
	u, err := f.dyn.Resource(echov1.Resource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := unstructured.NestedString(u.Object, "status", "ready")
	return s
}

func toUnstructured(t *testing.T, e *echov1.Echo) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func equal(a, b []string) bool { return strings.Join(a, "|") == strings.Join(b, "|") }
