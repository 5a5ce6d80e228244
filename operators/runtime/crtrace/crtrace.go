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
	"github.com/kkloud/rlab/operators/trace"
)

// Predicate is the tracer's Handler for controller-runtime: a predicate
// that traces every event of one watch and lets through what all of filters
// let through (every event, with none). An event a filter stops is traced
// as filtered and is no cause of a reconcile. controller-runtime runs a
// watch's predicates just before its handler queues the request.
func Predicate(t *instrument.Tracer, filters ...predicate.Predicate) predicate.Predicate {
	pass := func(ok func(predicate.Predicate) bool) bool {
		for _, f := range filters {
			if !ok(f) {
				return false
			}
		}
		return true
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if !pass(func(f predicate.Predicate) bool { return f.Create(e) }) {
				t.Filtered(trace.InformerAdd, nil, e.Object, e.IsInInitialList)
				return false
			}
			t.Added(e.Object, e.IsInInitialList)
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			if !pass(func(f predicate.Predicate) bool { return f.Update(e) }) {
				t.Filtered(trace.InformerUpdate, e.ObjectOld, e.ObjectNew, false)
				return false
			}
			t.Updated(e.ObjectOld, e.ObjectNew)
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			if !pass(func(f predicate.Predicate) bool { return f.Delete(e) }) {
				t.Filtered(trace.InformerDelete, nil, e.Object, false)
				return false
			}
			t.Deleted(e.Object)
			return true
		},
		GenericFunc: func(e event.GenericEvent) bool {
			return pass(func(f predicate.Predicate) bool { return f.Generic(e) })
		},
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
