package clientgo

// In-process tests in the manner of sample-controller's controller_test.go:
// a fixture of objects in the informers' caches and the fake clients, one
// reconcile, then the calls it made. The cases are optest's, shared with
// the controller-runtime operator; this file builds the client-go one. The
// end-to-end behaviour (a real apiserver, garbage collector and kwok) is
// tested in sim/sandbox.

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/internal/optest"
)

// TestReconcile runs optest's cases (TestReconcile/CreatesDeployment, ...)
// against the client-go controller.
func TestReconcile(t *testing.T) { optest.Harness{Style: Style, New: newOperator}.Run(t) }

// operator is the controller over fake clients, with the world's objects
// put straight into the informers' indexers (no informer runs).
type operator struct {
	t        *testing.T
	c        *Controller
	kube     *kubefake.Clientset
	dyn      *dynamicfake.FakeDynamicClient
	recorder *record.FakeRecorder
}

func newOperator(t *testing.T, w optest.World) optest.Operator {
	t.Helper()
	ns := Style.Namespace()
	scheme := runtime.NewScheme()
	if err := echov1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var echoObjs, kubeObjs []runtime.Object
	for _, e := range w.Echoes {
		u, err := e.ToUnstructured()
		if err != nil {
			t.Fatal(err)
		}
		echoObjs = append(echoObjs, u)
	}
	for _, d := range w.Deployments {
		kubeObjs = append(kubeObjs, d)
	}
	if w.Defaults != nil {
		kubeObjs = append(kubeObjs, w.Defaults)
	}
	o := &operator{t: t, kube: kubefake.NewClientset(kubeObjs...), recorder: record.NewFakeRecorder(10),
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
			map[schema.GroupVersionResource]string{echov1.Resource: "EchoList"})}
	for _, obj := range echoObjs {
		// By resource: the tracker would guess "echos" from the kind.
		if err := o.dyn.Tracker().Create(echov1.Resource, obj, ns); err != nil {
			t.Fatal(err)
		}
	}
	conflicts := w.StatusConflicts
	o.dyn.PrependReactor("update", echov1.Plural, func(a core.Action) (bool, runtime.Object, error) {
		if u, ok := a.(core.UpdateAction); ok && a.GetSubresource() == "status" && conflicts > 0 {
			conflicts--
			name := u.GetObject().(*unstructured.Unstructured).GetName()
			return true, nil, apierrors.NewConflict(echov1.Resource.GroupResource(), name, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})

	kubeInformers := informers.NewSharedInformerFactory(o.kube, 0)
	defaultsInformers := informers.NewSharedInformerFactory(o.kube, 0)
	echoInformers := dynamicinformer.NewDynamicSharedInformerFactory(o.dyn, 0)
	c, err := NewController(o.kube, o.dyn, ns, optest.Image, kubeInformers, defaultsInformers, echoInformers, o.recorder,
		true, false, optest.DiscardTracer(ns), optest.Log())
	if err != nil {
		t.Fatal(err)
	}
	o.c = c
	for _, obj := range echoObjs {
		if err := echoInformers.ForResource(echov1.Resource).Informer().GetIndexer().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range w.Deployments {
		if err := kubeInformers.Apps().V1().Deployments().Informer().GetIndexer().Add(d); err != nil {
			t.Fatal(err)
		}
	}
	if w.Defaults != nil {
		if err := defaultsInformers.Core().V1().ConfigMaps().Informer().GetIndexer().Add(w.Defaults); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func (o *operator) Mapped(cm *corev1.ConfigMap) []string { return o.c.EchoKeys(cm) }

func (o *operator) Reconcile(name string) error {
	return o.c.reconcile(context.Background(), Style.Namespace()+"/"+name)
}

// Calls lists what both fake apiservers received, list and watch left out
// (no informer runs).
func (o *operator) Calls() []string {
	kinds := map[string]string{"deployments": "Deployment", "configmaps": "ConfigMap", echov1.Plural: echov1.Kind}
	var out []string
	for _, a := range append(o.kube.Actions(), o.dyn.Actions()...) {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		c := a.GetVerb() + " " + kinds[a.GetResource().Resource]
		if a.GetSubresource() != "" {
			c += "/" + a.GetSubresource()
		}
		out = append(out, c)
	}
	return out
}

func (o *operator) Deployment(name string) *appsv1.Deployment {
	o.t.Helper()
	obj, err := o.kube.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), Style.Namespace(), name)
	if err != nil {
		o.t.Fatal(err)
	}
	return obj.(*appsv1.Deployment)
}

func (o *operator) Status(name string) echov1.EchoStatus {
	o.t.Helper()
	obj, err := o.dyn.Tracker().Get(echov1.Resource, Style.Namespace(), name)
	if err != nil {
		o.t.Fatal(err)
	}
	e := &echov1.Echo{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, e); err != nil {
		o.t.Fatal(err)
	}
	return e.Status
}

func (o *operator) Events() <-chan string { return o.recorder.Events }
