package controller

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

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
