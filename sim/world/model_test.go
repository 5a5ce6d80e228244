package world

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
)

func TestSnapshotStyle(t *testing.T) {
	shell, rt := &NamespaceView{}, &NamespaceView{}
	tests := []struct {
		name string
		sn   Snapshot
		st   style.Style
		want *NamespaceView
	}{
		{"own cluster", Snapshot{Namespaces: map[string]*NamespaceView{"echo-shell": shell}}, style.Shell, shell},
		{"prefixed", Snapshot{Namespaces: map[string]*NamespaceView{"rlab-s1-echo-runtime": rt, "rlab-s1-echo-shell": shell}}, style.Runtime, rt},
		{"not watched", Snapshot{Namespaces: map[string]*NamespaceView{"rlab-s1-echo-shell": shell}}, style.ClientGo, nil},
		{"empty", Snapshot{}, style.Shell, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sn.Style(tt.st); got != tt.want {
				t.Errorf("Style(%s) = %p, want %p", tt.st, got, tt.want)
			}
		})
	}
}

// TestLeaseOfOwnOperator: a built-in style's namespace shows only the Lease
// named echo.LeaseName; a student's operator's namespace shows whatever
// Lease its operator made (the first by name), and leader.observed follows
// its holder.
func TestLeaseOfOwnOperator(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	lease := func(name, holder string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](10)}}
	}
	type step struct {
		name    string
		l       *coordinationv1.Lease // nil: deleted
		shown   string                // the Lease in the view, "" for none
		holder  string
		event   bool // a leader.observed
		eventOf string
	}
	tests := []struct {
		ns    string
		steps []step
	}{
		{"echo-mine", []step{
			{name: "mine-lock", l: lease("mine-lock", "mine-a"), shown: "mine-lock", holder: "mine-a", event: true, eventOf: "Lease/mine-lock"},
			{name: "mine-lock", l: lease("mine-lock", "mine-a"), shown: "mine-lock", holder: "mine-a"},
			{name: "zzz", l: lease("zzz", "other"), shown: "mine-lock", holder: "mine-a"},
			{name: "mine-lock", l: lease("mine-lock", "mine-b"), shown: "mine-lock", holder: "mine-b", event: true, eventOf: "Lease/mine-lock"},
			{name: "mine-lock", shown: "zzz", holder: "other", event: true, eventOf: "Lease/zzz"},
			{name: "zzz", event: true, eventOf: "Lease/zzz"},
		}},
		{"rlab-s1-echo-mine", []step{
			{name: "x", l: lease("x", "mine-a"), shown: "x", holder: "mine-a", event: true, eventOf: "Lease/x"},
		}},
		{"echo-clientgo", []step{
			{name: "mine-lock", l: lease("mine-lock", "mine-a")},
			{name: echo.LeaseName, l: lease(echo.LeaseName, "clientgo-a-1"), shown: echo.LeaseName, holder: "clientgo-a-1", event: true, eventOf: "Lease/" + echo.LeaseName},
			{name: "mine-lock", shown: echo.LeaseName, holder: "clientgo-a-1"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.ns, func(t *testing.T) {
			m := newNSModel(tt.ns, "img")
			for i, s := range tt.steps {
				evs := m.setLease(s.name, s.l, now)
				if got := len(evs) == 1; got != s.event || len(evs) > 1 {
					t.Fatalf("step %d (%s): events %v, want one: %v", i, s.name, evs, s.event)
				}
				if s.event && (evs[0].Kind != trace.LeaderObserved || evs[0].Object != s.eventOf || trace.As[trace.Leader](evs[0]).Identity != s.holder) {
					t.Errorf("step %d: event %+v, want leader.observed of %s by %q", i, evs[0], s.eventOf, s.holder)
				}
				v := m.view().Lease
				switch {
				case s.shown == "" && v != nil:
					t.Errorf("step %d: lease %+v shown, want none", i, v)
				case s.shown != "" && (v == nil || v.Name != s.shown || v.Holder != s.holder):
					t.Errorf("step %d: lease %+v, want %s held by %q", i, v, s.shown, s.holder)
				}
			}
		})
	}
}

// TestDeploymentRefused: a Deployment whose ReplicaFailure condition holds
// is seen as refused, in its message; any other condition is not.
func TestDeploymentRefused(t *testing.T) {
	const msg = `pods "echo-hello-1" is forbidden: exceeded quota: rlab-student`
	tests := []struct {
		name string
		cond appsv1.DeploymentCondition
		want string
	}{
		{"refused", appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Message: msg}, msg},
		{"no longer", appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionFalse, Message: msg}, ""},
		{"progressing", appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Message: "ok"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "echo-hello"},
				Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{tt.cond}}}
			if got := (controlled{}).deploymentView(d).Refused; got != tt.want {
				t.Errorf("Refused = %q, want %q", got, tt.want)
			}
		})
	}
}
