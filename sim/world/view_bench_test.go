package world

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
)

// scaleModel is one namespace with n Echoes, each with its Deployment, a
// ReplicaSet and one Pod, chained by controller ownerReferences.
func scaleModel(n int) *nsModel {
	m := newNSModel("echo-runtime", echo.DefaultImage)
	ctl := func(kind, name string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, Name: name, UID: uid, Controller: new(true)}}
	}
	for i := range n {
		name := fmt.Sprintf("scale-%03d", i)
		e := &echov1.Echo{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("e" + name)}}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: echo.DeploymentName(name), UID: types.UID("d" + name),
			OwnerReferences: ctl("Echo", name, e.UID)}}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-rs", UID: types.UID("r" + name),
			OwnerReferences: ctl("Deployment", d.Name, d.UID)}}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: rs.Name + "-pod", UID: types.UID("p" + name),
			OwnerReferences: ctl("ReplicaSet", rs.Name, rs.UID)}}
		m.echoes[name], m.deployments[d.Name], m.replicaSets[rs.Name], m.pods[p.Name] = e, d, rs, p
	}
	return m
}

// TestViewAtScale: every Echo's Deployment carries exactly its own
// ReplicaSet and Pod.
func TestViewAtScale(t *testing.T) {
	v := scaleModel(50).view()
	for name, e := range v.Echoes {
		d := e.Deployment
		if d == nil || len(d.ReplicaSets) != 1 || len(d.Pods) != 1 || d.Pods[0].Name != echo.DeploymentName(name)+"-rs-pod" {
			t.Fatalf("Echo %s: %+v", name, d)
		}
	}
}

// BenchmarkView500: one namespace's view with 500 Echoes (a snapshot holds
// three), as rlab bench --echoes 500 makes.
func BenchmarkView500(b *testing.B) {
	m := scaleModel(500)
	b.ReportAllocs()
	for b.Loop() {
		_ = m.view()
	}
}
