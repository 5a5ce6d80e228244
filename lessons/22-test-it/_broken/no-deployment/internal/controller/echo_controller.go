// Package controller, as lesson 22 breaks it: Reconcile reads the Echo and
// makes nothing. A test of what Reconcile makes fails on it.
package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kkloudv1 "example.com/echo/api/v1"
)

// EchoReconciler reconciles an Echo object.
type EchoReconciler struct {
	client.Client
	Scheme    *runtime.Scheme
	APIReader client.Reader
}

// Reconcile reads the Echo, and stops there.
func (r *EchoReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var echo kkloudv1.Echo
	return ctrl.Result{}, client.IgnoreNotFound(r.Get(ctx, req.NamespacedName, &echo))
}

// SetupWithManager watches Echoes.
func (r *EchoReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&kkloudv1.Echo{}).Named("echo").Complete(r)
}
