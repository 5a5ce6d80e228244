package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/cluster/clustertest"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestReady checks what Start promised: Ready, untainted nodes and the
// pinned version.
func TestReady(t *testing.T) {
	simtest.NeedsControlPlane(t)
	for _, name := range cluster.NodeNames() {
		n, err := shared.cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !cluster.NodeReady(n) {
			t.Fatalf("node %s not ready/untainted: taints=%v conditions=%v", name, n.Spec.Taints, n.Status.Conditions)
		}
	}
	if v := shared.backend.Version(); v != "v1.36.3" {
		t.Fatalf("server version %q, want v1.36.3", v)
	}
	var names []string
	for _, p := range shared.backend.Phases() {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "apiserver+etcd,echo crd,nodes ready,apiserver healthy,controllers,nodes untainted,healthy" {
		t.Fatalf("phases = %s", got)
	}
	// The timeline: each process started once, kube-controller-manager
	// after the apiserver's hooks (its own look at /healthz is once a
	// second), and the CPU of all six measured (the garbage collector is
	// a kube-controller-manager of its own).
	tl := shared.backend.Timeline()
	at := map[string]time.Duration{}
	for _, m := range tl.Marks {
		at[m.Who+" "+strings.Fields(m.What)[0]] = m.At
	}
	if kcm, ok := at["kube-controller-manager started"]; !ok || kcm < at["kube-apiserver healthy"] || at["kube-apiserver healthy"] == 0 {
		t.Errorf("kube-controller-manager started at %v, the apiserver healthy at %v: want after; marks %+v", kcm, at["kube-apiserver healthy"], tl.Marks)
	}
	// kwok found the Nodes' Lease namespace there: had it not, it would
	// have tried again a second later, and the Nodes waited for that.
	kwokLog, err := os.ReadFile(filepath.Join(shared.root, "logs", "kwok.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(kwokLog), "lease namespace not found") {
		t.Errorf("kwok waited for namespace %s:\n%s", corev1.NamespaceNodeLease, kwokLog)
	}
	if len(tl.CPU) != 6 {
		t.Errorf("CPU of %d processes, want 6: %+v", len(tl.CPU), tl.CPU)
	}
}

// TestOwnerReferenceGC: a Deployment owned by a ConfigMap gets Ready Pods, and
// deleting the owner removes the Deployment, its ReplicaSet and its Pods:
// the garbage collector and kwok at work, which plain envtest lacks.
func TestOwnerReferenceGC(t *testing.T) {
	simtest.NeedsControlPlane(t)
	ctx := t.Context()
	ns := clustertest.Namespace(t, shared.cs, "gc")
	owner, err := shared.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "owner"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	if _, err := shared.cs.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", 2, &ref), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, 60*time.Second, "Deployment web 2/2 Ready", deploymentReady(ns, "web", 2))

	rs, err := shared.cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(rs.Items) != 1 {
		t.Fatalf("want 1 ReplicaSet, got %v (%v)", len(rs.Items), err)
	}
	if _, total, _ := podsReady(ctx, ns, "web"); total != 2 {
		t.Fatalf("want 2 pods, got %d", total)
	}

	if err := shared.cs.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, 60*time.Second, "Deployment, ReplicaSet and Pods collected", gone(ns, "web"))
}

// TestNamespaceDeletion: a namespace holding a Deployment with Pods, a
// ConfigMap and an Echo is deleted completely instead of sticking in
// Terminating.
func TestNamespaceDeletion(t *testing.T) {
	simtest.NeedsControlPlane(t)
	ctx := t.Context()
	ns := clustertest.Namespace(t, shared.cs, "nsdel")
	if _, err := shared.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.cs.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", 2, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.dyn.Resource(echov1.Resource).Namespace(ns).Create(ctx, echo("hello", map[string]any{"message": "hi"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, 60*time.Second, "Deployment web 2/2 Ready", deploymentReady(ns, "web", 2))

	if err := shared.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, 90*time.Second, "namespace "+ns+" gone", func(ctx context.Context) (bool, error) {
		_, err := shared.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func echo(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": echov1.GroupVersion.String(),
		"kind":       echov1.Kind,
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
}

// TestEchoValidation: the apiserver enforces the CRD schema with its own
// message naming the field, stores nothing for a rejected spec, defaults
// replicas to 1 and keeps a 0 (an Echo scaled to zero).
func TestEchoValidation(t *testing.T) {
	simtest.NeedsControlPlane(t)
	ctx := t.Context()
	ns := clustertest.Namespace(t, shared.cs, "crd")
	echoes := shared.dyn.Resource(echov1.Resource).Namespace(ns)
	tests := []struct {
		name string
		spec map[string]any
		want []string // fragments of the apiserver's message
	}{
		{"replicas-negative", map[string]any{"message": "hi", "replicas": int64(-1)},
			[]string{"spec.replicas", "should be greater than or equal to 0"}},
		{"replicas-six", map[string]any{"message": "hi", "replicas": int64(6)},
			[]string{"spec.replicas", "should be less than or equal to 5"}},
		{"replicas-string", map[string]any{"message": "hi", "replicas": "abc"},
			[]string{"spec.replicas", "must be of type integer"}},
		{"no-message", map[string]any{"replicas": int64(2)},
			[]string{"spec.message", "Required value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := echoes.Create(ctx, echo(tc.name, tc.spec), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: got %v, want an Invalid error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q lacks %q", err, w)
				}
			}
			if _, err := echoes.Get(ctx, tc.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("rejected Echo was stored: %v", err)
			}
		})
	}

	for _, tc := range []struct {
		name string
		spec map[string]any
		want int64
	}{
		{"replicas-default", map[string]any{"message": "hi"}, 1},
		{"replicas-zero", map[string]any{"message": "hi", "replicas": int64(0)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := echoes.Create(ctx, echo(tc.name, tc.spec), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r, found, err := unstructured.NestedInt64(got.Object, "spec", "replicas")
			if err != nil || !found || r != tc.want {
				t.Fatalf("spec.replicas = %d (found=%v, %v), want %d", r, found, err, tc.want)
			}
		})
	}
}

// TestCapacity: the fake Nodes hold what a sandbox can ask for (500 Echoes
// per style, 3 styles, up to 2 replicas each, plus the sample Echoes), and a
// Deployment of many replicas, more than one node of the old size held,
// becomes Ready: scheduler, controllers and kwok keep up.
func TestCapacity(t *testing.T) {
	simtest.NeedsControlPlane(t)
	const need = 3*500*2 + 100
	nodes, err := shared.cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods int64
	for _, n := range nodes.Items {
		if n.Annotations[cluster.FakeNodeAnnotation] == "fake" {
			pods += n.Status.Allocatable.Pods().Value()
		}
	}
	if pods < need {
		t.Fatalf("fake nodes hold %d pods, want at least %d", pods, need)
	}

	const replicas = 300
	ns := clustertest.Namespace(t, shared.cs, "many")
	start := time.Now()
	if _, err := shared.cs.AppsV1().Deployments(ns).Create(t.Context(), deployment(ns, "many", replicas, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, 3*time.Minute, fmt.Sprintf("Deployment many %d/%d Ready", replicas, replicas), deploymentReady(ns, "many", replicas))
	t.Logf("%d replicas Ready in %s", replicas, time.Since(start).Round(time.Millisecond))
}
