package controller

import (
	"testing"

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
	// TODO(lesson 22, step 2): create an Echo (newEcho) in a namespace of
	// the test's own (newNamespace), reconcile it once (reconcileOnce),
	// and check that Deployment echo-<name> is there, with the Echo's
	// replicas and a controller ownerReference naming the Echo
	// (metav1.IsControlledBy).
	t.Fatal("TODO(lesson 22, step 2)")
}

// TestDeletedEchoDeploymentCollected: an Echo deleted, its Deployment
// goes: the garbage collector's work, not Reconcile's.
func TestDeletedEchoDeploymentCollected(t *testing.T) {
	// TODO(lesson 22, step 3): create and reconcile an Echo, delete it,
	// and poll (wait.PollUntilContextTimeout, every 100 ms for 10 s) until
	// Get of its Deployment says NotFound (apierrors.IsNotFound).
	t.Fatal("TODO(lesson 22, step 3)")
}
