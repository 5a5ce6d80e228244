package classroom

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kkloud/rlab/sim/cluster"
)

// node is a Ready Node with room for pods pods, cpu and memory.
func node(name string, pods, cpu, memory string, fakeNode bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(pods),
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		}}
	if fakeNode {
		n.Annotations = map[string]string{cluster.FakeNodeAnnotation: "fake"}
	}
	return n
}

// pod is a running pod on a Node, requesting cpu.
func pod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// needs are a small lesson of the course's size and a large one: a hundred
// Echoes of a pod each (lesson 11 before its Echoes were scaled to zero).
var needs = []Need{{Lesson: 1, Title: "one", Echoes: 2, Pods: 4}, {Lesson: 11, Title: "hundred", Echoes: 101, Pods: 103}}

// TestQuotaFor: the quota holds what the most demanding lesson holds, with
// room for a rollout's second set of pods and a few Echoes of the
// student's; its CPU and memory are its pods at the default request.
func TestQuotaFor(t *testing.T) {
	q := QuotaFor(needs)
	if q.Echoes != 106 || q.Deployments != 106 || q.Pods != 206 || q.ConfigMaps != configMaps {
		t.Errorf("QuotaFor = %+v", q)
	}
	cpu, mem := q.Requests()
	if cpu.String() != "2060m" || mem.String() != "3296Mi" {
		t.Errorf("Requests = %s, %s; want 206 × 10m, 206 × 16Mi", cpu.String(), mem.String())
	}
}

// TestPlan: a class fits a cluster, or is refused lesson by lesson with
// the students that fit at once and the Nodes it lacks. On kwok's Nodes
// only the pod count counts; on real ones, CPU and memory too.
func TestPlan(t *testing.T) {
	tests := []struct {
		name     string
		objs     []runtime.Object
		students int
		fits     bool
		want     []string
	}{
		{"three real nodes, thirty students",
			[]runtime.Object{node("n1", "110", "4", "16Gi", false), node("n2", "110", "4", "16Gi", false), node("n3", "110", "4", "16Gi", false), pod("dns", "100m"), pod("proxy", "100m")},
			30, false, []string{
				"cluster: 3 Nodes; free: 328 pods, 11800m CPU, 48Gi memory (after the 2 pods already there)",
				"1 one       12              360     27: NO",
				"11 hundred  309             9270    1: NO",
				"30 students do not fit: lesson 1 (27 at once), lesson 11 (1 at once). Have fewer students on those lessons at once, or give the cluster 82 more Nodes like n1 (110 pods, 4 CPU, 16Gi memory each).",
			}},
		{"three real nodes, one student", []runtime.Object{node("n1", "110", "4", "16Gi", false), node("n2", "110", "4", "16Gi", false), node("n3", "110", "4", "16Gi", false)},
			1, true, []string{"1 student fits, every lesson taken by all of them at once."}},
		{"real nodes short of CPU before pods", []runtime.Object{node("n1", "1000", "1", "16Gi", false)},
			1, false, []string{"11 hundred  309             309    0: NO", "1 student does not fit: lesson 11 (0 at once)", "3 more Nodes like n1"}},
		{"kwok's nodes", []runtime.Object{node("k1", "1000", "1", "1Gi", true), node("k2", "1000", "1", "1Gi", true), node("k3", "1000", "1", "1Gi", true), node("k4", "1000", "1", "1Gi", true)},
			12, true, []string{"all kwok's (pods cost no machine: only their number counts)", "11 hundred  309             3708    all"}},
		{"no Node ready", nil, 3, false, []string{"give the cluster Nodes: it has none ready"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cap, err := ReadCapacity(context.Background(), fake.NewClientset(tt.objs...))
			if err != nil {
				t.Fatal(err)
			}
			p := NewPlan(cap, needs, QuotaFor(needs), tt.students)
			var out bytes.Buffer
			if err := p.Write(&out, cap); err != nil {
				t.Fatal(err)
			}
			if p.Fits() != tt.fits {
				t.Errorf("Fits = %v, want %v", p.Fits(), tt.fits)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("no %q in\n%s", w, out.String())
				}
			}
		})
	}
}
