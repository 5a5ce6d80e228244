package cluster_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	echoop "github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/cluster/kindtest"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
)

// TestKind brings up the kind backend for real: a node running real
// containers, the Echo CRD, pods of the workload image that answer HTTP, the
// garbage collector collecting what an Echo owns, and a stop that leaves no
// container, volume or network behind.
func TestKind(t *testing.T) {
	simtest.NeedsControlPlane(t)
	kindtest.Require(t)
	kindtest.Lock(t)
	root, err := os.MkdirTemp("", "rlab-kind-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s", root)
			return
		}
		_ = os.RemoveAll(root)
	})
	// The backend's caller holds the state dir, as a sandbox does: a cluster
	// whose state dir nobody holds is an orphan to any other start.
	lock, err := state.Dir{Root: root}.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	logf, err := os.Create(filepath.Join(root, "rlab.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	var notes []string
	k := cluster.NewKind(cluster.KindOptions{
		StateRoot: root,
		Image:     kindtest.Image(),
		RunDir:    filepath.Join(root, "run"),
		LogDir:    filepath.Join(root, "logs"),
		Log:       slog.New(slog.NewTextHandler(logf, nil)),
		Note:      func(s string) { notes = append(notes, s) },
	})
	// A registry entry of a cluster whose state dir is gone: Start sweeps it.
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(cache, "rlab", "kind", "clusters", "rlab-0rphan00")
	if err := os.MkdirAll(filepath.Dir(orphan), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, []byte(filepath.Join(root, "gone")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		_ = k.Stop()
		t.Fatalf("start kind backend: %v (node log in %s)", err, filepath.Join(root, "logs"))
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = k.Stop()
		}
	})
	vols, err := kindtest.Volumes(ctx, k.ClusterName())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ready", func(t *testing.T) {
		var names []string
		for _, p := range k.Phases() {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, ","); got != "container engine,node image,kind cluster,echo crd,gc watches echo,node ready" {
			t.Errorf("phases = %s", got)
		}
		for _, n := range notes { // other clusters' orphans may be swept, not ours
			if strings.Contains(n, k.ClusterName()) {
				t.Errorf("note about our own cluster on a clean start: %q", n)
			}
		}
		if _, err := os.Stat(orphan); !os.IsNotExist(err) {
			t.Errorf("the registry entry of a cluster whose state dir is gone was not swept: %v", err)
		}
		entry, err := os.ReadFile(filepath.Join(filepath.Dir(orphan), k.ClusterName()))
		if err != nil || strings.TrimSpace(string(entry)) != root {
			t.Errorf("registry entry of the running cluster = %q, %v; want %s", entry, err, root)
		}
		if k.Detail() != "node "+kindtest.Image() {
			t.Errorf("Detail() = %q, want the node image %s", k.Detail(), kindtest.Image())
		}
		if strings.HasPrefix(k.Image(), cluster.OfflinePrefix) && k.Version() != "v1.36.3" {
			t.Errorf("offline node runs %q, want v1.36.3", k.Version())
		}
		if err := os.WriteFile(filepath.Join(t.TempDir(), "kc"), k.Kubeconfig(), 0o600); err != nil || len(k.Kubeconfig()) == 0 {
			t.Errorf("no kubeconfig: %v", err)
		}
	})

	cs := kubernetes.NewForConfigOrDie(k.Config())
	dyn := dynamic.NewForConfigOrDie(k.Config())
	image := k.WorkloadImage(echoop.DefaultImage)

	t.Run("pods answer with their text", func(t *testing.T) {
		ctx := t.Context()
		ns := "kind-pods"
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, echoDeployment(ns, "web", image, "hello from a real pod"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		simtest.Eventually(t, 2*time.Minute, "Deployment web 2/2 Ready on kind", kindDeploymentReady(cs, ns, "web", 2))
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) != 2 {
			t.Fatalf("pods: %d (%v)", len(pods.Items), err)
		}
		for _, p := range pods.Items {
			body, err := cs.CoreV1().Pods(ns).ProxyGet("http", p.Name, "5678", "/", nil).DoRaw(ctx)
			if err != nil || strings.TrimSpace(string(body)) != "hello from a real pod" {
				t.Errorf("pod %s answered %q (%v), want its -text", p.Name, body, err)
			}
		}
	})

	t.Run("an Echo's dependents are collected", func(t *testing.T) {
		ctx := t.Context()
		ns := "kind-gc"
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		owner, err := dyn.Resource(echov1.Resource).Namespace(ns).Create(ctx, echo("owner", map[string]any{"message": "owner"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d := echoDeployment(ns, "owned", image, "owned")
		d.OwnerReferences = []metav1.OwnerReference{{APIVersion: echov1.Group + "/" + echov1.Version, Kind: echov1.Kind,
			Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		simtest.Eventually(t, 2*time.Minute, "Deployment owned 2/2 Ready", kindDeploymentReady(cs, ns, "owned", 2))
		t0 := time.Now()
		if err := dyn.Resource(echov1.Resource).Namespace(ns).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		simtest.Eventually(t, time.Minute, "Deployment and Pods of a deleted Echo collected", func(ctx context.Context) (bool, error) {
			ds, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(ds.Items) > 0 {
				return false, err
			}
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=owned"})
			return err == nil && len(pods.Items) == 0, err
		})
		t.Logf("collected %.1fs after the Echo was deleted", time.Since(t0).Seconds())
	})

	t.Run("stop leaves nothing", func(t *testing.T) {
		stopped = true
		if err := k.Stop(); err != nil {
			t.Fatal(err)
		}
		left, err := kindtest.Leftovers(context.Background(), k.ClusterName(), vols)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) > 0 {
			t.Fatalf("left after Stop: %v", left)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(orphan), k.ClusterName())); !os.IsNotExist(err) {
			t.Errorf("registry entry left after Stop: %v", err)
		}
		if _, err := os.Stat(filepath.Join(root, "run")); !os.IsNotExist(err) {
			t.Errorf("run dir still there: %v", err)
		}
		if _, err := os.Stat(filepath.Join(root, "logs", "kind-node.log")); err != nil {
			t.Errorf("node log not kept: %v", err)
		}
	})
}

// echoDeployment is two pods of the workload image answering text, Ready
// once they answer HTTP.
func echoDeployment(ns, name, image, text string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "echo", Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Args: []string{"-text=" + text},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 5678}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")},
					}, PeriodSeconds: 1},
				}}},
			},
		},
	}
}

func kindDeploymentReady(cs kubernetes.Interface, ns, name string, want int32) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.ReadyReplicas == want && d.Status.UpdatedReplicas == want, nil
	}
}
