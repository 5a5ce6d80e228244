package echo

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
)

// The conditions every operator writes on an Echo, and their reasons. The
// shell loop (operators/shell/echo-operator.sh) writes the same words.
const (
	// ConditionReady is True when every replica the Echo asks for is ready.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the Deployment is still moving
	// toward the spec: not yet seen by its controller, or some pods not
	// updated, not ready, or not yet gone.
	ConditionProgressing = "Progressing"

	ReasonReplicasReady    = "ReplicasReady"    // Ready True
	ReasonReplicasNotReady = "ReplicasNotReady" // Ready False
	ReasonRollingOut       = "RollingOut"       // Progressing True
	ReasonUpToDate         = "UpToDate"         // Progressing False
)

// Status is the status an operator writes once it has reconciled e (its
// spec at e.Generation) into Deployment d (nil if there is none): status.ready,
// observedGeneration, and the Ready and Progressing conditions. prev is the
// conditions the Echo has now: a condition whose status does not change keeps
// its lastTransitionTime; one that does gets now, in whole seconds as the
// apiserver stores it, so that writing the result back and reading it
// compare equal.
func Status(e *echov1.Echo, d *appsv1.Deployment, prev []metav1.Condition, now time.Time) echov1.EchoStatus {
	want := Replicas(e.Spec)
	var ready int32
	if d != nil {
		ready = d.Status.ReadyReplicas
	}
	st := echov1.EchoStatus{Ready: Ready(d, e.Spec), ObservedGeneration: e.Generation}
	for _, c := range prev {
		st.Conditions = append(st.Conditions, *c.DeepCopy())
	}
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	set := func(typ string, ok bool, reason, message string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: message,
			ObservedGeneration: e.Generation, LastTransitionTime: at,
		})
	}
	if ready >= want {
		set(ConditionReady, true, ReasonReplicasReady, st.Ready+" replicas ready")
	} else {
		set(ConditionReady, false, ReasonReplicasNotReady, st.Ready+" replicas ready")
	}
	name := DeploymentName(e.Name)
	if rollingOut(d, want) {
		set(ConditionProgressing, true, ReasonRollingOut, fmt.Sprintf("Deployment %s is rolling out", name))
	} else {
		set(ConditionProgressing, false, ReasonUpToDate, fmt.Sprintf("Deployment %s is up to date", name))
	}
	return st
}

// rollingOut says whether Deployment d has not yet reached want replicas of
// its current template, all ready, with no other pod left.
func rollingOut(d *appsv1.Deployment, want int32) bool {
	if d == nil {
		return true
	}
	s := d.Status
	return s.ObservedGeneration < d.Generation || s.UpdatedReplicas < want || s.ReadyReplicas < want || s.Replicas > want
}
