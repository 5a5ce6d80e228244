package world_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/cluster/clustertest"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/world"
)

// shared is the one real control plane the tests in this package use; each
// test works in namespaces of its own, with a World of its own.
var shared struct {
	cfg *rest.Config
	cs  kubernetes.Interface
	dyn dynamic.Interface
}

// timeout bounds every wait for the cluster. Generous, so a loaded 2-core
// machine cannot flake; the sandbox's speed is measured elsewhere.
const timeout = 30 * time.Second

// image is the operators' image in these tests: not the default, so a World
// that judged drift by the default would see it everywhere.
const image = "rlab.local/echo-server:v1"

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, "world-test", func(env *clustertest.Env) {
		shared.cfg = env.Config()
		shared.cs = kubernetes.NewForConfigOrDie(env.Config())
		shared.dyn = dynamic.NewForConfigOrDie(env.Config())
	}))
}

// judged waits until w has made and published every judgment pending on the
// model it has seen, so that "no such event" means none will come.
func judged(t testing.TB, w *world.World) {
	t.Helper()
	simtest.Eventually(t, timeout, "pending judgments made", simtest.True(func() bool { return w.Settling() == 0 }))
}

// fixture is one test's namespace, World and recorded events.
type fixture struct {
	ns  string
	w   *world.World
	rec *simtest.EventLog
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ns := clustertest.Namespace(t, shared.cs, "world")
	rec := &simtest.EventLog{}
	return &fixture{ns: ns, w: startWorld(t, []string{ns}, rec), rec: rec}
}

// startWorld starts a World that stops when the test ends.
// What it publishes must follow the trace schema.
func startWorld(t *testing.T, namespaces []string, rec *simtest.EventLog) *world.World {
	t.Helper()
	t.Cleanup(func() { rec.CheckSchema(t) }) // after the World stopped
	ctx, cancel := context.WithCancel(context.Background())
	w, err := world.Start(ctx, world.Options{
		Config:     shared.cfg,
		Namespaces: namespaces,
		Publish:    rec.Publish,
		Log:        slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
		Image:      image,
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-w.Done()
	})
	return w
}

func echoes(ns string) dynamic.ResourceInterface {
	return shared.dyn.Resource(echov1.Resource).Namespace(ns)
}

func toEcho(u *unstructured.Unstructured) (*echov1.Echo, error) {
	e := &echov1.Echo{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, e); err != nil {
		return nil, fmt.Errorf("convert Echo: %w", err)
	}
	return e, nil
}

func getEcho(ctx context.Context, ns, name string) (*echov1.Echo, error) {
	u, err := echoes(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return toEcho(u)
}

func createEcho(t *testing.T, ns, name, message string, replicas int32) {
	t.Helper()
	u, err := echov1.NewEcho(ns, name, message, replicas).ToUnstructured()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := echoes(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Echo %s/%s: %v", ns, name, err)
	}
}

// editEcho changes an Echo's spec, which bumps its generation.
func editEcho(t *testing.T, ns, name string, mutate func(*echov1.EchoSpec)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		e, err := getEcho(t.Context(), ns, name)
		if err != nil {
			return err
		}
		mutate(&e.Spec)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e)
		if err != nil {
			return err
		}
		_, err = echoes(ns).Update(t.Context(), &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("edit Echo %s/%s: %v", ns, name, err)
	}
}

// deployments is the admin client for a namespace's Deployments.
func deployments(ns string) interface {
	Get(context.Context, string, metav1.GetOptions) (*appsv1.Deployment, error)
	Create(context.Context, *appsv1.Deployment, metav1.CreateOptions) (*appsv1.Deployment, error)
	Update(context.Context, *appsv1.Deployment, metav1.UpdateOptions) (*appsv1.Deployment, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
} {
	return shared.cs.AppsV1().Deployments(ns)
}

// changeDeployment edits a Deployment by hand, as a student would.
func changeDeployment(t *testing.T, ns, name string, mutate func(*appsv1.Deployment)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(d)
		_, err = deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("change Deployment %s/%s: %v", ns, name, err)
	}
}

// reconcile plays the operator once, by hand: Step 1 fetch the Echo, Step 2
// compute the desired Deployment, Step 3 create or update it, Step 4 (once
// its pods are Ready) write status.
func reconcile(t *testing.T, ns, name string) {
	t.Helper()
	e, err := getEcho(t.Context(), ns, name)
	if err != nil {
		t.Fatalf("get Echo: %v", err)
	}
	want := echo.DesiredDeployment(e, nil, "rlab-test", image)
	simtest.Eventually(t, timeout, "create or update "+want.Name, func(ctx context.Context) (bool, error) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			have, err := deployments(ns).Get(ctx, want.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = deployments(ns).Create(ctx, want, metav1.CreateOptions{})
				return err
			}
			if err != nil {
				return err
			}
			have.Spec.Replicas = want.Spec.Replicas
			have.Spec.Template = want.Spec.Template
			have.OwnerReferences = want.OwnerReferences
			_, err = deployments(ns).Update(ctx, have, metav1.UpdateOptions{})
			return err
		})
		// AlreadyExists: the one deleted a moment ago is not gone yet.
		return err == nil, err
	})
	var d *appsv1.Deployment
	simtest.Eventually(t, timeout, want.Name+" ready", func(ctx context.Context) (bool, error) {
		d, err = deployments(ns).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.ObservedGeneration == d.Generation &&
			d.Status.ReadyReplicas == *want.Spec.Replicas && d.Status.Replicas == *want.Spec.Replicas, nil
	})
	writeStatus(t, ns, name, echo.Ready(d, e.Spec))
}

func writeStatus(t *testing.T, ns, name, ready string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := echoes(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, ready, "status", "ready"); err != nil {
			return err
		}
		_, err = echoes(ns).UpdateStatus(t.Context(), u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("write status of Echo %s/%s: %v", ns, name, err)
	}
}

// waitFor is World.WaitFor with the test's deadline.
func waitFor(t *testing.T, w *world.World, what string, cond func(world.Snapshot) bool) world.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var last world.Snapshot
	if err := w.WaitFor(ctx, func(s world.Snapshot) bool { last = s; return cond(s) }); err != nil {
		t.Fatalf("%s: %v; last snapshot: %s", what, err, dump(last))
	}
	return last
}

func dump(s world.Snapshot) string {
	out := ""
	for ns, v := range s.Namespaces {
		out += fmt.Sprintf("\n%s: lease=%+v", ns, v.Lease)
		for _, e := range v.Echoes {
			out += fmt.Sprintf("\n  Echo %+v", *e)
			if e.Deployment != nil {
				out += dumpDeployment(e.Deployment)
			}
		}
		for _, d := range v.Orphans {
			out += "\n  orphan" + dumpDeployment(d)
		}
	}
	return out
}

func dumpDeployment(d *world.DeploymentView) string {
	out := fmt.Sprintf("\n    Deployment %+v", *d)
	for _, rs := range d.ReplicaSets {
		out += fmt.Sprintf("\n      RS %+v", *rs)
	}
	for _, p := range d.Pods {
		out += fmt.Sprintf("\n      Pod %+v", *p)
	}
	return out
}

// settled is true when d has want replicas, all of them Ready, and nothing is
// left of scale-downs or rollouts: one ReplicaSet with pods, want pods.
func settled(d *world.DeploymentView, want int32) bool {
	if d == nil || d.Replicas != want || d.ReadyReplicas != want || len(d.Pods) != int(want) {
		return false
	}
	active := 0
	for _, rs := range d.ReplicaSets {
		if rs.Replicas > 0 {
			active++
			if rs.ReadyReplicas != want {
				return false
			}
		}
	}
	for _, p := range d.Pods {
		if !p.Ready || p.Deleting || p.Phase != string(corev1.PodRunning) {
			return false
		}
	}
	return active == 1
}

// helloReady creates Echo hello with 2 replicas, plays the operator until it
// is 2/2, and waits until the World has seen it converge.
func (f *fixture) helloReady(t *testing.T) world.Snapshot {
	t.Helper()
	createEcho(t, f.ns, "hello", "hello from rlab", 2)
	reconcile(t, f.ns, "hello")
	f.rec.Wait(t, timeout, trace.Converged, "Echo/hello", nil)
	return waitFor(t, f.w, "hello 2/2 in the model", func(s world.Snapshot) bool {
		e := s.Namespaces[f.ns].Echoes["hello"]
		return e != nil && e.Ready == "2/2" && settled(e.Deployment, 2)
	})
}

func TestTree(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	ns, other := clustertest.Namespace(t, shared.cs, "world"), clustertest.Namespace(t, shared.cs, "world")
	rec := &simtest.EventLog{}
	w := startWorld(t, []string{ns, other}, rec)

	s := w.Snapshot()
	for _, n := range []string{ns, other} {
		v := s.Namespaces[n]
		if v == nil || len(v.Echoes) != 0 || len(v.Orphans) != 0 || v.Lease != nil {
			t.Fatalf("namespace %s at start: want an empty view, got %+v", n, v)
		}
	}
	select { // drain what the initial list left
	case <-w.Changed():
	default:
	}

	createEcho(t, ns, "hello", "hello from rlab", 2)
	select {
	case <-w.Changed():
	case <-time.After(timeout):
		t.Fatal("Changed: no value after creating an Echo")
	}
	reconcile(t, ns, "hello")

	s = waitFor(t, w, "Echo → Deployment → ReplicaSet → 2 Ready Pods", func(s world.Snapshot) bool {
		e := s.Namespaces[ns].Echoes["hello"]
		return e != nil && e.Ready == "2/2" && settled(e.Deployment, 2)
	})
	e := s.Namespaces[ns].Echoes["hello"]
	u, err := getEcho(t.Context(), ns, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "hello" || e.UID != string(u.UID) || e.Message != "hello from rlab" || e.Replicas != 2 ||
		e.Generation != 1 || e.Deleting {
		t.Errorf("Echo view: %+v", *e)
	}
	d := e.Deployment
	if d.Name != "echo-hello" || d.Owner != "Echo/hello" || d.Message != "hello from rlab" || d.Deleting || d.UID == "" {
		t.Errorf("Deployment view: %+v", *d)
	}
	if len(d.ReplicaSets) != 1 || d.ReplicaSets[0].Replicas != 2 || d.ReplicaSets[0].ReadyReplicas != 2 {
		t.Errorf("ReplicaSets: %s", dumpDeployment(d))
	}
	for _, p := range d.Pods {
		if p.Created.IsZero() {
			t.Errorf("pod %s: no creation time", p.Name)
		}
	}
	if v := s.Namespaces[other]; len(v.Echoes) != 0 {
		t.Errorf("namespace %s: want no Echo, got %s", other, dump(s))
	}

	// Snapshots are deep copies: changing one changes neither the model nor
	// the next one.
	e.Deployment.Pods[0].Name = "scribbled"
	e.Finalizers = append(e.Finalizers, "scribbled")
	delete(s.Namespaces[ns].Echoes, "hello")
	again := w.Snapshot().Namespaces[ns].Echoes["hello"]
	if again == nil || again.Deployment.Pods[0].Name == "scribbled" || slices.Contains(again.Finalizers, "scribbled") {
		t.Errorf("a snapshot shares state with the model: %s", dump(w.Snapshot()))
	}

	// created → ready is a convergence too.
	c := rec.Wait(t, timeout, trace.Converged, "Echo/hello", nil)
	if cv, _ := c.Convergence(); c.Source != world.Source || c.Namespace != ns || !cv.Created || cv.Generation != 1 || cv.Echo != "hello" {
		t.Errorf("created convergence: %+v", c)
	}
	if cv, ok := c.Convergence(); !ok || cv.LatencyMS <= 0 {
		t.Errorf("created convergence latency_ms = %v", cv.LatencyMS)
	}
	judged(t, w)
	rec.None(t, trace.DriftDetected)
	rec.None(t, trace.GCCollected)
}

func TestWaitFor(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	f := newFixture(t)
	always := func(world.Snapshot) bool { return true }
	hasEcho := func(s world.Snapshot) bool { return s.Namespaces[f.ns].Echoes["waited"] != nil }

	stoppedCtx, stop := context.WithCancel(context.Background())
	stopped, err := world.Start(stoppedCtx, world.Options{Config: shared.cfg, Namespaces: []string{f.ns}})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	<-stopped.Done()

	for _, tc := range []struct {
		name    string
		w       *world.World
		wait    time.Duration
		cond    func(world.Snapshot) bool
		act     func(t *testing.T) // runs while WaitFor waits
		wantErr error
	}{
		{name: "holds at once", w: f.w, wait: timeout, cond: always},
		{name: "after a change", w: f.w, wait: timeout, cond: hasEcho,
			act: func(t *testing.T) { createEcho(t, f.ns, "waited", "hi", 1) }},
		{name: "never holds", w: f.w, wait: 300 * time.Millisecond, cond: func(world.Snapshot) bool { return false },
			wantErr: context.DeadlineExceeded},
		{name: "world stopped", w: stopped, wait: timeout, cond: func(world.Snapshot) bool { return false },
			wantErr: world.ErrStopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), tc.wait)
			defer cancel()
			if tc.act != nil {
				if tc.cond(tc.w.Snapshot()) {
					t.Fatal("cond holds before the change")
				}
				tc.act(t)
			}
			if err := tc.w.WaitFor(ctx, tc.cond); !errors.Is(err, tc.wantErr) {
				t.Fatalf("WaitFor = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestDrift(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	for _, tc := range []struct {
		what    string
		breakIt func(t *testing.T, ns string)
	}{
		{trace.DriftReplicas, func(t *testing.T, ns string) {
			changeDeployment(t, ns, "echo-hello", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](3) })
		}},
		{trace.DriftMessage, func(t *testing.T, ns string) {
			changeDeployment(t, ns, "echo-hello", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Args = []string{echo.Arg("tampered")}
			})
		}},
		{trace.DriftImage, func(t *testing.T, ns string) {
			changeDeployment(t, ns, "echo-hello", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Image = echo.DefaultImage // not the operators'
			})
		}},
		{trace.DriftOwner, func(t *testing.T, ns string) {
			changeDeployment(t, ns, "echo-hello", func(d *appsv1.Deployment) { d.OwnerReferences = nil })
		}},
		{trace.DriftDeleted, func(t *testing.T, ns string) {
			if err := deployments(ns).Delete(t.Context(), "echo-hello", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			before := f.helloReady(t)
			oldRS := before.Namespaces[f.ns].Echoes["hello"].Deployment.ReplicaSets[0].Name

			tc.breakIt(t, f.ns)
			det := f.rec.Wait(t, timeout, trace.DriftDetected, "Deployment/echo-hello", nil)
			if trace.As[trace.Drift](det).What != tc.what || trace.As[trace.Drift](det).Echo != "hello" || det.Namespace != f.ns || det.Source != world.Source {
				t.Errorf("drift.detected: %+v, want what=%s", det, tc.what)
			}

			reconcile(t, f.ns, "hello") // the operator repairs it
			rep := f.rec.Wait(t, timeout, trace.DriftRepaired, "Deployment/echo-hello", nil)
			if d, _ := rep.Drift(); d.What != tc.what || d.Echo != "hello" {
				t.Errorf("drift.repaired: %+v, want what=%s", rep, tc.what)
			}
			if d, _ := rep.Drift(); d.LatencyMS <= 0 {
				t.Errorf("drift.repaired latency_ms = %v, want > 0", d.LatencyMS)
			}

			// Wait until scale-downs and rollouts have finished, so every Pod
			// deletion they cause has reached the World.
			waitFor(t, f.w, "hello settled again", func(s world.Snapshot) bool {
				e := s.Namespaces[f.ns].Echoes["hello"]
				return e != nil && settled(e.Deployment, 2) && len(e.Deployment.ReplicaSets) <= 2
			})
			judged(t, f.w)
			if n := len(f.rec.Of(trace.DriftDetected)); n != 1 {
				t.Errorf("want one drift.detected, got %v", f.rec.Of(trace.DriftDetected))
			}
			if n := len(f.rec.Of(trace.DriftRepaired)); n != 1 {
				t.Errorf("want one drift.repaired, got %v", f.rec.Of(trace.DriftRepaired))
			}
			if n := len(f.rec.Of(trace.Converged)); n != 1 {
				t.Errorf("a repair is not a convergence: want only the created one, got %v", f.rec.Of(trace.Converged))
			}

			if tc.what != trace.DriftDeleted {
				// A ReplicaSet scaling its Pods down is not garbage collection.
				f.rec.None(t, trace.GCCollected)
				return
			}
			// The hand-deleted Deployment's ReplicaSet and Pods are collected.
			f.rec.Wait(t, timeout, trace.GCCollected, "ReplicaSet/"+oldRS, func(e trace.Event) bool {
				return trace.As[trace.GC](e).Owner == "Deployment/echo-hello"
			})
			for _, p := range before.Namespaces[f.ns].Echoes["hello"].Deployment.Pods {
				f.rec.Wait(t, timeout, trace.GCCollected, "Pod/"+p.Name, func(e trace.Event) bool {
					return trace.As[trace.GC](e).Owner == "ReplicaSet/"+oldRS
				})
			}
			for _, e := range f.rec.Of(trace.GCCollected) {
				if e.Object == "Deployment/echo-hello" {
					t.Errorf("a Deployment deleted by hand while its Echo lives is not gc: %+v", e)
				}
			}
		})
	}
}

func TestConverge(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	for _, tc := range []struct {
		name     string
		edit     func(*echov1.EchoSpec)
		replicas int32
		message  string
	}{
		{"replicas", func(s *echov1.EchoSpec) { s.Replicas = ptr.To[int32](3) }, 3, "hello from rlab"},
		{"message", func(s *echov1.EchoSpec) { s.Message = "xin chao" }, 2, "xin chao"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.helloReady(t)

			editEcho(t, f.ns, "hello", tc.edit)
			reconcile(t, f.ns, "hello")

			c := f.rec.Wait(t, timeout, trace.Converged, "Echo/hello", func(e trace.Event) bool { cv, _ := e.Convergence(); return !cv.Created })
			if cv, _ := c.Convergence(); cv.Generation != 2 || cv.Echo != "hello" || c.Namespace != f.ns {
				t.Errorf("echo.converged: %+v, want generation 2", c)
			}
			if cv, _ := c.Convergence(); cv.LatencyMS <= 0 {
				t.Errorf("echo.converged latency_ms = %v, want > 0", cv.LatencyMS)
			}
			s := waitFor(t, f.w, "hello converged in the model", func(s world.Snapshot) bool {
				e := s.Namespaces[f.ns].Echoes["hello"]
				return e != nil && e.Generation == 2 && settled(e.Deployment, tc.replicas)
			})
			e := s.Namespaces[f.ns].Echoes["hello"]
			if e.Replicas != tc.replicas || e.Message != tc.message || e.Deployment.Message != tc.message {
				t.Errorf("after the edit: %s", dump(s))
			}
			// An edit of the Echo is a convergence, never drift.
			judged(t, f.w)
			f.rec.None(t, trace.DriftDetected)
			f.rec.None(t, trace.DriftRepaired)
			if n := len(f.rec.Of(trace.Converged)); n != 2 {
				t.Errorf("want 2 echo.converged (created, edited), got %v", f.rec.Of(trace.Converged))
			}
		})
	}
}

func TestGarbageCollection(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	f := newFixture(t)
	before := f.helloReady(t).Namespaces[f.ns].Echoes["hello"].Deployment

	err := echoes(f.ns).Delete(t.Context(), "hello", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil {
		t.Fatal(err)
	}
	f.rec.Wait(t, timeout, trace.GCCollected, "Deployment/echo-hello", func(e trace.Event) bool { return trace.As[trace.GC](e).Owner == "Echo/hello" })
	for _, rs := range before.ReplicaSets {
		f.rec.Wait(t, timeout, trace.GCCollected, "ReplicaSet/"+rs.Name, func(e trace.Event) bool {
			return trace.As[trace.GC](e).Owner == "Deployment/echo-hello"
		})
	}
	for _, p := range before.Pods {
		f.rec.Wait(t, timeout, trace.GCCollected, "Pod/"+p.Name, func(e trace.Event) bool {
			return trace.As[trace.GC](e).Owner == "ReplicaSet/"+before.ReplicaSets[0].Name
		})
	}
	waitFor(t, f.w, "everything gone from the model", func(s world.Snapshot) bool {
		v := s.Namespaces[f.ns]
		return len(v.Echoes) == 0 && len(v.Orphans) == 0
	})
	for _, e := range f.rec.Of(trace.GCCollected) {
		if e.Namespace != f.ns || e.Source != world.Source {
			t.Errorf("gc.collected: %+v", e)
		}
	}
	judged(t, f.w)
	f.rec.None(t, trace.DriftDetected)
}

func TestOrphan(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	f := newFixture(t)
	f.helloReady(t)

	err := echoes(f.ns).Delete(t.Context(), "hello", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)})
	if err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, f.w, "echo-hello orphaned", func(s world.Snapshot) bool {
		v := s.Namespaces[f.ns]
		return len(v.Echoes) == 0 && len(v.Orphans) == 1 && v.Orphans[0].Owner == ""
	})
	d := s.Namespaces[f.ns].Orphans[0]
	if d.Name != "echo-hello" || !settled(d, 2) {
		t.Errorf("orphan: %s", dump(s))
	}
	judged(t, f.w)
	f.rec.None(t, trace.GCCollected)
	f.rec.None(t, trace.DriftDetected)
}

func TestLeader(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	f := newFixture(t)
	leases := shared.cs.CoordinationV1().Leases(f.ns)
	lease := func(name, holder string, transitions int32) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(holder),
				LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime:            ptr.To(metav1.NewMicroTime(time.Now())),
				LeaseTransitions:     ptr.To(transitions),
			},
		}
	}
	update := func(holder string, transitions int32) func(t *testing.T) {
		return func(t *testing.T) {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				l, err := leases.Get(t.Context(), echo.LeaseName, metav1.GetOptions{})
				if err != nil {
					return err
				}
				l.Spec = lease(echo.LeaseName, holder, transitions).Spec
				_, err = leases.Update(t.Context(), l, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	create := func(name, holder string) func(t *testing.T) {
		return func(t *testing.T) {
			if _, err := leases.Create(t.Context(), lease(name, holder, 0), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Steps run in order; each says what the model shows after it and which
	// leader.observed it causes, if any.
	steps := []struct {
		name                   string
		act                    func(t *testing.T)
		holder                 string // in the snapshot
		identity, previous     string // of the event it causes, if wantEvent
		transitions            int32
		wantNoLease, wantEvent bool
	}{
		{name: "another lease is ignored", act: create("someone-else", "x-1"), wantNoLease: true},
		{name: "acquired", act: create(echo.LeaseName, "clientgo-a-101"), holder: "clientgo-a-101",
			wantEvent: true, identity: "clientgo-a-101", previous: ""},
		{name: "renewed: no event", act: update("clientgo-a-101", 0), holder: "clientgo-a-101"},
		{name: "failover", act: update("clientgo-b-202", 1), holder: "clientgo-b-202", transitions: 1,
			wantEvent: true, identity: "clientgo-b-202", previous: "clientgo-a-101"},
		{name: "released", act: update("", 1), holder: "", transitions: 1,
			wantEvent: true, identity: "", previous: "clientgo-b-202"},
	}
	wantEvents := 0
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.act(t)
			waitFor(t, f.w, "lease in the model", func(s world.Snapshot) bool {
				l := s.Namespaces[f.ns].Lease
				if st.wantNoLease {
					return l == nil
				}
				return l != nil && l.Holder == st.holder && l.Transitions == st.transitions &&
					l.DurationSeconds == 15 && !l.Renewed.IsZero()
			})
			if st.wantEvent {
				wantEvents++
			}
			// Events are published just after the model changes.
			var got []trace.Event
			simtest.Eventually(t, timeout, fmt.Sprintf("%d leader.observed", wantEvents), func(context.Context) (bool, error) {
				got = f.rec.Of(trace.LeaderObserved)
				return len(got) >= wantEvents, nil
			})
			if len(got) != wantEvents {
				t.Fatalf("want %d leader.observed, got %v", wantEvents, got)
			}
			if !st.wantEvent {
				return
			}
			e := got[len(got)-1]
			if l, _ := e.Leader(); e.Object != "Lease/"+echo.LeaseName || e.Namespace != f.ns || l.Identity != st.identity ||
				l.Previous != st.previous || l.Transitions != int(st.transitions) {
				t.Errorf("leader.observed: %+v, want identity=%q previous=%q transitions=%d",
					e, st.identity, st.previous, st.transitions)
			}
		})
	}
}

// TestFinalizerHoldsDeletion: an Echo with a finalizer is seen waiting
// (echo.deleting naming the finalizer), then gone with how long it waited;
// the registry ConfigMap shows in the snapshot as the shared helpers write it.
func TestFinalizerHoldsDeletion(t *testing.T) {
	simtest.NeedsControlPlane(t)
	f := newFixture(t)
	ctx := t.Context()
	createEcho(t, f.ns, "held", "bye", 1)
	e, err := getEcho(ctx, f.ns, "held")
	if err != nil {
		t.Fatal(err)
	}
	if err := echo.Register(ctx, shared.cs, f.ns, "held", string(e.UID)); err != nil {
		t.Fatal(err)
	}
	patch, err := echo.FinalizersPatch(e.ResourceVersion, []string{echo.Finalizer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := echoes(f.ns).Patch(ctx, "held", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, f.w, "registry lists held, held has the finalizer", func(s world.Snapshot) bool {
		v := s.Namespaces[f.ns]
		return v.Registry["held"] == string(e.UID) && v.Echoes["held"] != nil && echo.HasFinalizer(v.Echoes["held"].Finalizers)
	})

	if err := echoes(f.ns).Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleting := f.rec.Wait(t, timeout, trace.EchoDeleting, "Echo/held", nil)
	if got := trace.As[trace.Deleting](deleting).Finalizers; got != echo.Finalizer {
		t.Errorf("echo.deleting finalizers = %q, want %q", got, echo.Finalizer)
	}
	if v := f.w.Snapshot().Namespaces[f.ns].Echoes["held"]; v == nil || !v.Deleting {
		t.Fatalf("held while its finalizer holds it: %+v, want present and deleting", v)
	}
	f.rec.None(t, trace.EchoDeleted)

	// The cleanup, as the operators do it: unlist, then drop the finalizer.
	if err := echo.Unregister(ctx, shared.cs, f.ns, "held"); err != nil {
		t.Fatal(err)
	}
	cur, err := getEcho(ctx, f.ns, "held")
	if err != nil {
		t.Fatal(err)
	}
	patch, err = echo.FinalizersPatch(cur.ResourceVersion, echo.WithoutFinalizer(cur.Finalizers))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := echoes(f.ns).Patch(ctx, "held", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := f.rec.Wait(t, timeout, trace.EchoDeleted, "Echo/held", nil)
	if waited := trace.As[trace.Deleted](deleted).WaitedMS; waited <= 0 || deleted.Time.Before(deleting.Time) {
		t.Errorf("echo.deleted waited_ms = %v at %v, want > 0 and after echo.deleting at %v", waited, deleted.Time, deleting.Time)
	}
	s := waitFor(t, f.w, "held gone and unlisted", func(s world.Snapshot) bool {
		_, listed := s.Namespaces[f.ns].Registry["held"]
		return s.Namespaces[f.ns].Echoes["held"] == nil && !listed
	})
	if s.Namespaces[f.ns].Registry == nil {
		t.Error("registry ConfigMap vanished from the snapshot; want it kept, empty")
	}
}

// TestHandover: a field.handover comes when another field manager takes
// spec.replicas of a Deployment (a forced apply, an Update), and none when
// an apply is refused for its conflict or only joins the owner by applying
// the same value.
func TestHandover(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	f := newFixture(t)
	f.helloReady(t)
	creator := waitFor(t, f.w, "an owner of spec.replicas", func(s world.Snapshot) bool {
		return len(s.Namespaces[f.ns].Echoes["hello"].Deployment.ReplicasOwners) == 1
	}).Namespaces[f.ns].Echoes["hello"].Deployment.ReplicasOwners[0]

	apply := func(manager string, replicas int, force bool) error {
		body := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"echo-hello"},"spec":{"replicas":%d}}`, replicas)
		_, err := shared.cs.AppsV1().Deployments(f.ns).Patch(t.Context(), "echo-hello", types.ApplyPatchType, []byte(body),
			metav1.PatchOptions{FieldManager: manager, Force: ptr.To(force)})
		return err
	}
	owners := func(want ...string) {
		t.Helper()
		waitFor(t, f.w, fmt.Sprintf("spec.replicas owned by %v", want), func(s world.Snapshot) bool {
			return slices.Equal(s.Namespaces[f.ns].Echoes["hello"].Deployment.ReplicasOwners, want)
		})
	}
	handovers := func() []trace.Event { return f.rec.Of(trace.Handover) }

	// Joining with the same value takes nothing.
	if err := apply("joiner", 2, false); err != nil {
		t.Fatalf("apply of the same value: %v", err)
	}
	owners(slices.Sorted(slices.Values([]string{creator, "joiner"}))...)
	if err := apply("joiner", 1, true); err != nil { // and it lets go of it again
		t.Fatal(err)
	}
	owners("joiner")
	took := f.rec.Wait(t, timeout, trace.Handover, "Deployment/echo-hello", nil)
	both := strings.Join(slices.Sorted(slices.Values([]string{creator, "joiner"})), ",")
	if o, _ := took.Ownership(); o.Path != "spec.replicas" || o.From != both ||
		o.To != "joiner" || o.Echo != "hello" {
		t.Errorf("field.handover %+v, want spec.replicas from %s and joiner to joiner, Echo hello", took.Payload, creator)
	}

	// A conflicting apply is refused: nothing changes hands.
	err := apply("student", 3, false)
	if !apierrors.IsConflict(err) {
		t.Fatalf("apply of another value without force: %v, want 409 Conflict", err)
	}
	// An Update takes it without asking.
	changeDeployment(t, f.ns, "echo-hello", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](2) })
	owners(creator)
	waitFor(t, f.w, "two handovers", func(world.Snapshot) bool { return len(handovers()) == 2 })
	if last, _ := handovers()[1].Ownership(); last.From != "joiner" || last.To != creator {
		t.Errorf("second field.handover %+v, want joiner → %s", last, creator)
	}
	if n := len(handovers()); n != 2 {
		t.Errorf("field.handover events %v, want 2", handovers())
	}
}

// TestStatusByHand: a status written by kubectl (its field manager, on the
// status subresource) is seen as a person's edit, though the generation
// stays; the operator's status writes are not.
func TestStatusByHand(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	f := newFixture(t)
	f.helloReady(t)
	writeStatus(t, f.ns, "hello", "1/2") // as the operator (the test's own manager)
	s := waitFor(t, f.w, "the operator's status seen", func(s world.Snapshot) bool {
		e := s.Namespaces[f.ns].Echoes["hello"]
		return e != nil && e.Ready == "1/2"
	})
	if e := s.Namespaces[f.ns].Echoes["hello"]; !e.StatusEdited.IsZero() {
		t.Fatalf("the operator's status write counted as a hand edit at %v", e.StatusEdited)
	}
	before := time.Now()
	_, err := echoes(f.ns).Patch(t.Context(), "hello", types.MergePatchType, []byte(`{"status":{"ready":"0/2"}}`),
		metav1.PatchOptions{FieldManager: "kubectl-patch"}, "status")
	if err != nil {
		t.Fatal(err)
	}
	s = waitFor(t, f.w, "the hand's status seen", func(s world.Snapshot) bool {
		e := s.Namespaces[f.ns].Echoes["hello"]
		return e != nil && e.Ready == "0/2"
	})
	e := s.Namespaces[f.ns].Echoes["hello"]
	if e.StatusEdited.Before(before) {
		t.Errorf("StatusEdited = %v, want after %v", e.StatusEdited, before)
	}
	if e.Generation != 1 {
		t.Errorf("generation %d after a status write, want 1", e.Generation)
	}
}
