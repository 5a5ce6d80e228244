package cluster_test

import (
	"context"
	"github.com/kkloud/rlab/sim/poll"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kkloud/rlab/sim/cluster/clustertest"
)

// Speed is measured here, not asserted in tests. Run with `make bench`
// (go test -run '^$' -bench . -benchtime 5x ./sim/cluster/): each benchmark
// reports the median and the max of its iterations in milliseconds.
// Targets on a 2-core machine: ready ≤ 5 s, Deployment Ready ≤ 1 s, GC ≤ 300 ms.

func report(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, name+"-median-ms")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, name+"-max-ms")
}

// BenchmarkStartStop starts a whole envtest backend (apiserver, etcd, CRD,
// kube-controller-manager, scheduler, kwok, Ready node) and stops it.
func BenchmarkStartStop(b *testing.B) {
	var ready, stop []time.Duration
	for b.Loop() {
		t0 := time.Now()
		be, err := clustertest.Start(b.Context(), "cluster-bench")
		if err != nil {
			b.Fatal(err)
		}
		ready = append(ready, time.Since(t0))
		t1 := time.Now()
		if err := be.Stop(); err != nil {
			b.Fatal(err)
		}
		stop = append(stop, time.Since(t1))
	}
	report(b, "ready", ready)
	report(b, "stop", stop)
}

// pollFast polls cond every 2 ms: the timing resolution of these benchmarks.
func pollFast(b *testing.B, timeout time.Duration, cond func(context.Context) (bool, error)) {
	if err := poll.Until(b.Context(), 2*time.Millisecond, timeout, "", cond); err != nil {
		b.Fatal("condition not met: ", err)
	}
}

// BenchmarkDeploymentReady: Deployment create → 2/2 Ready (Deployment status
// and both Pods), through deployment and replicaset controllers, scheduler
// and kwok. Then owner delete → Deployment, ReplicaSet and Pods gone.
func BenchmarkDeploymentReadyAndGC(b *testing.B) {
	ns := clustertest.Namespace(b, shared.cs, "bench")
	var ready, gc []time.Duration
	for b.Loop() {
		ctx := b.Context()
		owner, err := shared.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "owner"},
		}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
		t0 := time.Now()
		if _, err := shared.cs.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", 2, &ref), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		pollFast(b, 60*time.Second, deploymentReady(ns, "web", 2))
		ready = append(ready, time.Since(t0))

		t1 := time.Now()
		if err := shared.cs.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		pollFast(b, 60*time.Second, gone(ns, "web"))
		gc = append(gc, time.Since(t1))
	}
	report(b, "deploy-ready", ready)
	report(b, "gc", gc)
}
