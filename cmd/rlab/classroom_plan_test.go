package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kkloud/rlab/sim/feature/classroom"
)

// TestCoursePlan: the course as it is, planned for 30 students on a cluster
// of 3 real Nodes (110 pods, 4 CPU, 16Gi each) as docs/instructor.md says:
// no lesson holds more than lesson 21's 15 pods a student (lesson 11's
// hundred Echoes are scaled to zero), so the class is refused only for the
// pods every lesson needs, with how many fit at once.
func TestCoursePlan(t *testing.T) {
	needs, err := sharedNeeds()
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for i := 1; i <= 3; i++ {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110"),
					corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			}})
	}
	for _, name := range []string{"dns", "proxy"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	cap, err := classroom.ReadCapacity(context.Background(), fake.NewClientset(objs...))
	if err != nil {
		t.Fatal(err)
	}
	p := classroom.NewPlan(cap, needs, classroom.QuotaFor(needs), 30)
	var out bytes.Buffer
	if err := p.Write(&out, cap); err != nil {
		t.Fatal(err)
	}
	t.Logf("rlab classroom prepare --students 30 on 3 Nodes of 110 pods, 4 CPU, 16Gi:\n%s", &out)
	for _, n := range needs {
		if pods := 3 * n.Pods; pods > 15 {
			t.Errorf("lesson %d holds %d pods a student, want at most 15 (lesson 21's)", n.Lesson, pods)
		}
	}
	for _, w := range []string{
		"11 What a hundred Echoes cost             12              360     27: NO",
		"21 Chaos                                  15              450     21: NO",
		"30 students do not fit: lesson 1 (27 at once)",
		"give the cluster 2 more Nodes like n1",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("no %q in\n%s", w, &out)
		}
	}
}
