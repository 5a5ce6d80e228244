package echo

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
)

func TestStatus(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	later := t0.Add(90*time.Second + 300*time.Millisecond)
	deploy := func(gen, observed int64, replicas, updated, ready int32) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Generation = gen
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated, ReadyReplicas: ready}
		return d
	}
	e := echov1.NewEcho("ns", "hello", "hi", 2)
	e.Generation = 3
	// What the operator wrote at t0 when both replicas were ready.
	settled := Status(e, deploy(1, 1, 2, 2, 2), nil, t0)

	tests := []struct {
		name        string
		d           *appsv1.Deployment
		prev        []metav1.Condition
		ready       string
		wantReady   metav1.ConditionStatus
		wantRolling metav1.ConditionStatus
		// transitioned: the conditions whose lastTransitionTime is now.
		transitioned []string
	}{
		{"no Deployment yet", nil, nil, "0/2", metav1.ConditionFalse, metav1.ConditionTrue, []string{ConditionReady, ConditionProgressing}},
		{"not seen by its controller", deploy(2, 1, 2, 2, 2), settled.Conditions, "2/2", metav1.ConditionTrue, metav1.ConditionTrue, []string{ConditionProgressing}},
		{"one pod not ready", deploy(1, 1, 2, 2, 1), settled.Conditions, "1/2", metav1.ConditionFalse, metav1.ConditionTrue, []string{ConditionReady, ConditionProgressing}},
		{"an old pod not gone", deploy(1, 1, 3, 2, 2), settled.Conditions, "2/2", metav1.ConditionTrue, metav1.ConditionTrue, []string{ConditionProgressing}},
		{"settled, unchanged", deploy(1, 1, 2, 2, 2), settled.Conditions, "2/2", metav1.ConditionTrue, metav1.ConditionFalse, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Status(e, tc.d, tc.prev, later)
			if got.Ready != tc.ready || got.ObservedGeneration != 3 {
				t.Fatalf("ready %q observedGeneration %d, want %q 3", got.Ready, got.ObservedGeneration, tc.ready)
			}
			if len(got.Conditions) != 2 {
				t.Fatalf("conditions %+v, want one Ready and one Progressing", got.Conditions)
			}
			for typ, want := range map[string]metav1.ConditionStatus{ConditionReady: tc.wantReady, ConditionProgressing: tc.wantRolling} {
				c := meta.FindStatusCondition(got.Conditions, typ)
				if c == nil || c.Status != want || c.ObservedGeneration != 3 || c.Reason == "" || c.Message == "" {
					t.Fatalf("%s = %+v, want status %s at generation 3 with a reason and a message", typ, c, want)
				}
				wantAt := t0
				for _, tr := range tc.transitioned {
					if tr == typ {
						wantAt = later.Truncate(time.Second)
					}
				}
				if !c.LastTransitionTime.Time.Equal(wantAt) {
					t.Errorf("%s lastTransitionTime %s, want %s", typ, c.LastTransitionTime, wantAt)
				}
			}
			if len(tc.transitioned) == 0 && !equality.Semantic.DeepEqual(got, settled) {
				t.Errorf("a status that did not change must compare equal to the one written:\n got %+v\nwant %+v", got, settled)
			}
		})
	}
}
