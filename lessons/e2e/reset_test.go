package e2e

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestResetFromAnotherLesson: wherever a student left the lesson before
// (every step's action done but the last's, which usually puts things
// back: faults on, operators restarted with flags, frozen, a leader
// partitioned, a Role cut, a policy or a webhook installed, Echoes and
// orphans made), the reset that rlab lesson start N --reset and the
// instructor's classroom reset run brings the sandbox back to where every
// lesson starts, and lesson N's first step then passes. One sandbox, every
// lesson that runs in it (12 and 20 start a sandbox with their own
// operator), in turn.
func TestResetFromAnotherLesson(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	sb := startSandbox(t)
	p := runner.NewPlayer(sb)
	t.Cleanup(p.Close)
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	var base []*lessons.Lesson
	for _, l := range all {
		if l.Operator == nil && l.RunsOn(backend.Envtest.Name) {
			base = append(base, l)
		}
	}
	start := fingerprint(t, sb)
	for i, n := range base {
		m := base[(i+len(base)-1)%len(base)]
		t.Run(fmt.Sprintf("lesson %d left half-done, then %d", m.Number, n.Number), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
			defer cancel()
			t0 := time.Now()
			for _, s := range m.Steps[:len(m.Steps)-1] {
				if s.Action == nil {
					continue
				}
				for _, op := range s.Action.Play {
					// Out of its lesson's order an act may find nothing
					// to act on (no leader yet); what it changed stays.
					if err := p.Do(ctx, op); err != nil {
						t.Logf("lesson %d's %s: %v", m.Number, op.Name, err)
					}
				}
			}
			left := time.Since(t0)
			if err := p.Restore(ctx); err != nil {
				t.Fatalf("reset: %v", err)
			}
			if why, err := p.AwaitBaseline(ctx); err != nil {
				t.Fatalf("not at the baseline after the reset: %s", why)
			}
			var got string
			if err := simtest.Poll(ctx, time.Minute, func(context.Context) (bool, error) {
				got = fingerprint(t, sb)
				return got == start, nil
			}); err != nil {
				t.Fatalf("after the reset the sandbox is not as it started:\n got %s\nwant %s", got, start)
			}
			reset := time.Since(t0) - left
			r, err := p.PlayStep(ctx, &n.Steps[0])
			if err != nil {
				t.Fatalf("lesson %d's first step after the reset: %v", n.Number, err)
			}
			t.Logf("lesson %d's acts %.1fs, reset %.1fs, lesson %d step 1 %.1fs", m.Number, left.Seconds(), reset.Seconds(), n.Number, r.Took.Seconds())
		})
	}
}

// fingerprint is what a reset must bring back, as one comparable string:
// each replica's flags and proxy (faults, mode, latency), each style's
// tuning, Echoes and their specs, Deployments, ConfigMaps and the
// operators' Role, and whether lesson 16's policy or lesson 19's webhook
// is installed.
func fingerprint(t *testing.T, sb *sandbox.Sandbox) string {
	t.Helper()
	ctx := t.Context()
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	for _, st := range sb.Styles() {
		ns := sb.Namespace(st)
		for _, r := range sb.Operators().Replicas(st) {
			args, err := sb.Operators().ReplicaArgs(st.Source(r))
			if err != nil {
				add("%s/%s: %v", st, r, err)
			}
			add("%s/%s args %q", st, r, args)
			if px := sb.Faults().Proxy(st.Source(r)); px != nil {
				add("%s/%s faults %d mode %v latency %s", st, r, len(px.Faults()), px.Mode() == proxy.Normal, px.Latency())
			}
		}
		tun, err := sb.Flags().Tuning(st)
		add("%s tuning %+v %v", st, tun, err)
		echoes, err := sb.Admin().Echoes(st).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range echoes.Items {
			msg, _, _ := unstructured.NestedString(e.Object, "spec", "message")
			reps, _, _ := unstructured.NestedInt64(e.Object, "spec", "replicas")
			// Not its finalizers: lesson 9 ends with hello carrying one,
			// on purpose, and every operator honours it with or without
			// --finalizer; the lessons after it start so in a course.
			add("%s echo %s %q %d", st, e.GetName(), msg, reps)
		}
		deps, err := sb.Admin().Kube().AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range deps.Items {
			add("%s deployment %s", st, d.Name)
		}
		cms, err := sb.Admin().Kube().CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range cms.Items {
			if cm.Name != echo.RegistryName { // kept: --finalizer's, emptied by no lesson
				add("%s configmap %s", st, cm.Name)
			}
		}
		role, err := sb.Admin().Kube().RbacV1().Roles(ns).Get(ctx, sandbox.RoleName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		add("%s role as granted %v", st, reflect.DeepEqual(role.Rules, sandbox.OperatorRules(st)))
	}
	api := sb.Admin().Kube().AdmissionregistrationV1()
	_, err := api.ValidatingAdmissionPolicies().Get(ctx, sandbox.PolicyName, metav1.GetOptions{})
	add("policy gone %v", apierrors.IsNotFound(err))
	_, err = api.ValidatingWebhookConfigurations().Get(ctx, sandbox.WebhookName, metav1.GetOptions{})
	add("webhook gone %v", apierrors.IsNotFound(err))
	sort.Strings(out)
	return fmt.Sprint(slices.Compact(out))
}
