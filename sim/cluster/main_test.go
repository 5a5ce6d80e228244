package cluster_test

import (
	"context"
	"os"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	echoop "github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/cluster/clustertest"
)

// shared is the one real control plane the tests in this package use; each
// test works in namespaces of its own.
var shared struct {
	backend *cluster.Envtest
	root    string // its run dir, logs and pids
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	assets  string
}

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, "cluster-test", func(env *clustertest.Env) {
		shared.backend, shared.assets, shared.root = env.Envtest, env.Assets, env.Root
		shared.cs = kubernetes.NewForConfigOrDie(env.Config())
		shared.dyn = dynamic.NewForConfigOrDie(env.Config())
	}))
}

// deployment is a plain Deployment of n pods labelled app=name.
func deployment(ns, name string, n int32, owner *metav1.OwnerReference) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "echo", Image: echoop.DefaultImage, Args: []string{"-text=hi"},
				}}},
			},
		},
	}
	if owner != nil {
		d.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return d
}

// podsReady counts the Ready pods labelled app=name.
func podsReady(ctx context.Context, ns, name string) (ready, total int, err error) {
	pods, err := shared.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return 0, 0, err
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, len(pods.Items), nil
}

// deploymentReady is true once the Deployment reports want ready replicas and
// that many Pods are Ready.
func deploymentReady(ns, name string, want int32) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		d, err := shared.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready, _, err := podsReady(ctx, ns, name)
		if err != nil {
			return false, err
		}
		return d.Status.ReadyReplicas == want && ready == int(want), nil
	}
}

// gone is true once nothing labelled app=name is left: Deployment,
// ReplicaSets, Pods.
func gone(ns, name string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := shared.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		rs, err := shared.cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil || len(rs.Items) > 0 {
			return false, err
		}
		pods, err := shared.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil || len(pods.Items) > 0 {
			return false, err
		}
		return true, nil
	}
}
