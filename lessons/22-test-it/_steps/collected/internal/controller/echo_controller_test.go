package controller

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kkloudv1 "example.com/echo/api/v1"
)

// TestEchoCRDInstalled: the control plane serves Echoes, from the CRD in
// config/crd/bases.
func TestEchoCRDInstalled(t *testing.T) {
	c := testClient(t)
	var echoes kkloudv1.EchoList
	if err := c.List(t.Context(), &echoes); err != nil {
		t.Fatalf("list Echoes: %v", err)
	}
}

// TestReconcileMakesDeployment: one pass of Reconcile over a new Echo
// makes its Deployment.
func TestReconcileMakesDeployment(t *testing.T) {
	ns := newNamespace(t)
	echo := newEcho(t, ns, "hello")
	reconcileOnce(t, echo)

	var dep appsv1.Deployment
	if err := k8sClient.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "echo-hello"}, &dep); err != nil {
		t.Fatalf("Deployment echo-hello: %v", err)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != echo.Spec.Replicas {
		t.Errorf("Deployment echo-hello has replicas %v, want %d", dep.Spec.Replicas, echo.Spec.Replicas)
	}
	if !metav1.IsControlledBy(&dep, echo) {
		t.Errorf("Deployment echo-hello's controller is not Echo hello: %+v", dep.OwnerReferences)
	}
}

// TestDeletedEchoDeploymentCollected: an Echo deleted, its Deployment
// goes: the garbage collector's work, not Reconcile's.
func TestDeletedEchoDeploymentCollected(t *testing.T) {
	ns := newNamespace(t)
	echo := newEcho(t, ns, "bye")
	reconcileOnce(t, echo)
	key := types.NamespacedName{Namespace: ns, Name: "echo-bye"}
	if err := k8sClient.Get(t.Context(), key, &appsv1.Deployment{}); err != nil {
		t.Fatalf("Deployment echo-bye: %v", err)
	}

	if err := k8sClient.Delete(t.Context(), echo); err != nil {
		t.Fatalf("delete Echo: %v", err)
	}
	// Nothing here deletes the Deployment: the garbage collector follows
	// its ownerReference to an Echo that is gone.
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(k8sClient.Get(ctx, key, &appsv1.Deployment{})), nil
	})
	if err != nil {
		t.Fatalf("Deployment echo-bye still there 10s after its Echo was deleted: %v", err)
	}
}

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
