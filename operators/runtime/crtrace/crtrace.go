// Package crtrace adapts the Go operators' tracer (operators/echo/instrument)
// to controller-runtime: a predicate for its events, a wrapper for its
// Reconciler and a constructor for its workqueue. Only the controller-runtime
// operator imports it, so the client-go operator links no controller-runtime.
package crtrace

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kkloud/rlab/operators/echo/instrument"
)

// Predicate is the tracer's Handler for controller-runtime: a predicate that
// lets every event through and only traces it. controller-runtime runs
// predicates just before its handler queues the request.
func Predicate(t *instrument.Tracer) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			t.Added(e.Object, e.IsInInitialList)
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			t.Updated(e.ObjectOld, e.ObjectNew)
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			t.Deleted(e.Object)
			return true
		},
		GenericFunc: func(event.GenericEvent) bool { return true },
	}
}

// Traced wraps a controller-runtime Reconciler with the tracer's Reconcile.
func Traced(t *instrument.Tracer, r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var res reconcile.Result
		err := t.Reconcile(ctx, req.String(), func(ctx context.Context, _ string) error {
			var err error
			res, err = r.Reconcile(ctx, req)
			return err
		})
		return res, err
	})
}

// RequestQueue is instrument.NewQueue for controller-runtime's
// controller.Options.NewQueue.
func RequestQueue(t *instrument.Tracer) func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return instrument.NewQueue(t, name, rl, func(req reconcile.Request) string { return req.String() })
	}
}
