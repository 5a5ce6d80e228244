package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	// TODO(lesson 22, step 3): create and reconcile an Echo, delete it,
	// and poll (wait.PollUntilContextTimeout, every 100 ms for 10 s) until
	// Get of its Deployment says NotFound (apierrors.IsNotFound).
	t.Fatal("TODO(lesson 22, step 3)")
}
