package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kkloudv1 "example.com/echo/api/v1"
)

// testClient is k8sClient, or the test fails if TestMain made none.
func testClient(t *testing.T) client.Client {
	t.Helper()
	if k8sClient == nil {
		t.Fatal("no client: TestMain started no control plane (step 1)")
	}
	return k8sClient
}

// newNamespace makes a namespace for one test and deletes it after: the
// namespace controller empties it then.
func newNamespace(t *testing.T) string {
	t.Helper()
	c := testClient(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return ns.Name
}

// newEcho makes Echo name in namespace ns, with two replicas.
func newEcho(t *testing.T, ns, name string) *kkloudv1.Echo {
	t.Helper()
	e := &kkloudv1.Echo{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       kkloudv1.EchoSpec{Message: "hi", Replicas: 2},
	}
	if err := testClient(t).Create(t.Context(), e); err != nil {
		t.Fatalf("create Echo: %v", err)
	}
	return e
}

// reconcileOnce runs one pass of the reconciler over Echo e, as the
// manager would on an event about it.
func reconcileOnce(t *testing.T, e *kkloudv1.Echo) {
	t.Helper()
	c := testClient(t)
	r := &EchoReconciler{Client: c, Scheme: c.Scheme(), APIReader: c}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: e.Namespace, Name: e.Name}}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
}
