package testenv

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/simtest"
)

var fooGVK = schema.GroupVersionKind{Group: "samplecontroller.example.com", Version: "v1alpha1", Kind: "Foo"}

// TestEnvironment is what a kubebuilder suite does with envtest, and what
// envtest cannot: the CRDs of a project's config/crd installed, then an
// owner deleted and its Deployment, ReplicaSet and Pod collected, a Pod
// Ready on a Node, a namespace deleted; Stop leaves no process.
func TestEnvironment(t *testing.T) {
	simtest.NeedsControlPlane(t)
	te := &Environment{
		CRDDirectoryPaths:     []string{filepath.Join("testdata", "crd")},
		ErrorIfCRDPathMissing: true,
	}
	began := time.Now()
	cfg, err := te.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start took %v", time.Since(began).Round(time.Millisecond))
	pids := entries(t, te, true)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = te.Stop()
		}
	})
	if len(te.KubeConfig) == 0 {
		t.Error("no KubeConfig after Start")
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "owners"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	t.Run("an owner's Deployment, ReplicaSet and Pod collected", func(t *testing.T) {
		foo := &unstructured.Unstructured{}
		foo.SetGroupVersionKind(fooGVK)
		foo.SetNamespace(ns.Name)
		foo.SetName("example-foo")
		if err := unstructured.SetNestedField(foo.Object, "example-foo", "spec", "deploymentName"); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, foo); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{"app": "example-foo"}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "example-foo", Namespace: ns.Name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: foo.GetAPIVersion(), Kind: foo.GetKind(), Name: foo.GetName(), UID: foo.GetUID(),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:latest"}}},
				},
			},
		}
		if err := c.Create(ctx, dep); err != nil {
			t.Fatal(err)
		}
		// The Deployment controller, the scheduler and kwok: its Pod is
		// Ready on a Node, as a kubelet would report it.
		simtest.Eventually(t, 30*time.Second, "the Deployment's Pod Ready", func(ctx context.Context) (bool, error) {
			var got appsv1.Deployment
			if err := c.Get(ctx, client.ObjectKeyFromObject(dep), &got); err != nil {
				return false, err
			}
			return got.Status.ReadyReplicas == 1, nil
		})
		if err := c.Delete(ctx, foo); err != nil {
			t.Fatal(err)
		}
		deleted := time.Now()
		simtest.Eventually(t, 10*time.Second, "the Foo's Deployment, ReplicaSet and Pod collected", func(ctx context.Context) (bool, error) {
			var deps appsv1.DeploymentList
			var rss appsv1.ReplicaSetList
			var pods corev1.PodList
			for _, l := range []client.ObjectList{&deps, &rss, &pods} {
				if err := c.List(ctx, l, client.InNamespace(ns.Name)); err != nil {
					return false, err
				}
			}
			return len(deps.Items)+len(rss.Items)+len(pods.Items) == 0, nil
		})
		t.Logf("collected %v after the Foo was deleted", time.Since(deleted).Round(time.Millisecond))
	})

	t.Run("a namespace deleted", func(t *testing.T) {
		if err := c.Delete(ctx, ns); err != nil {
			t.Fatal(err)
		}
		simtest.Eventually(t, 30*time.Second, "namespace gone", func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
			return apierrors.IsNotFound(err), nil
		})
	})

	t.Run("a CRD applied after Start gets garbage collection", func(t *testing.T) {
		lateCRDCollected(t, te, c)
	})

	// Read now: the garbage collector has been restarted since Start.
	pids = entries(t, te, true)
	root := te.root
	stopped = true
	if err := te.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		if p.Alive() {
			t.Errorf("%s (pid %d) still runs after Stop", p.Name, p.PID)
		}
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("%s left after Stop (%v)", root, err)
	}
	if err := te.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// lateCRDCollected applies a CRD, as a spec that installs its own would,
// and checks that an owner of the new kind has its dependent collected
// within seconds, not after the garbage collector's 30 s resync.
func lateCRDCollected(t *testing.T, te *Environment, c client.Client) {
	ext, err := apiextensionsclient.NewForConfig(te.Config)
	if err != nil {
		t.Fatal(err)
	}
	bar := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "bars.late.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "late.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "bars", Singular: "bar", Kind: "Bar", ListKind: "BarList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	ctx := t.Context()
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, bar, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(schema.GroupVersionKind{Group: "late.example.com", Version: "v1", Kind: "Bar"})
	owner.SetNamespace("default")
	owner.SetName("late-owner")
	// Refused until the CRD is served, then held 2 s by the apiserver.
	simtest.Eventually(t, 30*time.Second, "a Bar created", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, owner) == nil, nil
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late-owned", Namespace: "default", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "late.example.com/v1", Kind: "Bar", Name: owner.GetName(), UID: owner.GetUID()}}}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	simtest.Eventually(t, 10*time.Second, "the Bar's ConfigMap collected", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})), nil
	})
	t.Logf("collected %v after the Bar was deleted", time.Since(deleted).Round(time.Millisecond))
	// Because the garbage collector was restarted for it, not by a lucky
	// resync.
	restarted := slices.ContainsFunc(te.backend.Timeline().Marks, func(m cluster.Mark) bool {
		return m.Who == cluster.GarbageCollector && strings.Contains(m.What, bar.Name)
	})
	if !restarted {
		t.Errorf("the garbage collector was not restarted for %s", bar.Name)
	}
}

// entries are the processes te started, read from its pid directory; with
// gc, the garbage collector too.
func entries(t *testing.T, te *Environment, gc bool) []proc.Entry {
	t.Helper()
	es, err := proc.Entries(filepath.Join(te.root, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	want := len(needed)
	if gc { // the garbage collector is a second kube-controller-manager
		want++
	}
	if len(es) < want {
		t.Fatalf("%d processes recorded, want at least %d: %+v", len(es), want, es)
	}
	return es
}

// helperEnv makes the test binary, instead of running tests, start an
// Environment, print its processes and wait to be killed.
const helperEnv = "RLAB_TESTENV_HELPER"

func TestMain(m *testing.M) {
	// controller-runtime's client logs through a logger that complains,
	// with a stack trace, when none is set.
	log.SetLogger(logr.Discard())
	if os.Getenv(helperEnv) == "" {
		os.Exit(m.Run())
	}
	te := &Environment{}
	if _, err := te.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	es, err := proc.Entries(filepath.Join(te.root, "pids"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, e := range es {
		fmt.Printf("pid %d %s\n", e.PID, e.Name)
	}
	fmt.Println("root " + te.root)
	fmt.Println("started")
	select {}
}

// TestKilledTestBinary: a test binary killed by SIGKILL (a go test timeout
// on some platforms, a CI job cancelled) leaves no process of its control
// plane running.
func TestKilledTestBinary(t *testing.T) {
	simtest.NeedsControlPlane(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var pids []int
	var root string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 3 && f[0] == "pid" {
			pid, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
		if r, ok := strings.CutPrefix(line, "root "); ok {
			root = r
		}
		if line == "started" {
			break
		}
	}
	if len(pids) < len(needed) {
		t.Fatalf("the helper reported %d processes, want at least %d", len(pids), len(needed))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	simtest.Eventually(t, 10*time.Second, "every process of the killed test binary's control plane gone", simtest.True(func() bool {
		for _, pid := range pids {
			// Signal 0: the process exists. Not our child, so no zombie
			// of it lingers here.
			if syscall.Kill(pid, 0) == nil {
				return false
			}
		}
		return true
	}))
	// A killed binary cannot remove its directory: the processes are gone
	// and the files are what is left (in the temp dir).
	if root != "" {
		_ = os.RemoveAll(root)
	}
}

// TestNoGarbageCollector: with NoGarbageCollectorEnv set, the control
// plane runs no garbage collector, as envtest's: what lesson 22's check
// runs a student's test on, where it must fail.
func TestNoGarbageCollector(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Setenv(NoGarbageCollectorEnv, "1")
	te := &Environment{}
	if _, err := te.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := te.Stop(); err != nil {
			t.Error(err)
		}
	})
	var names []string
	for _, e := range entries(t, te, false) {
		names = append(names, e.Name)
	}
	if slices.Contains(names, cluster.GarbageCollector) || !slices.Contains(names, "kube-controller-manager") {
		t.Errorf("processes %v: want kube-controller-manager and no %s", names, cluster.GarbageCollector)
	}
}

// TestBadInput: one clear error for each.
func TestBadInput(t *testing.T) {
	envtestDir := t.TempDir()
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if err := os.WriteFile(filepath.Join(envtestDir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("RLAB_ASSETS", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, tc := range []struct {
		name string
		env  *Environment
		want []string
	}{
		{"missing CRD path", &Environment{CRDDirectoryPaths: []string{"testdata/nope"}, ErrorIfCRDPathMissing: true},
			[]string{"read CRDs", "testdata/nope"}},
		{"envtest's assets", &Environment{BinaryAssetsDirectory: envtestDir},
			[]string{"BinaryAssetsDirectory " + envtestDir + " lacks kube-controller-manager, kube-scheduler, kwok", "rlab's cache", "rlab assets get"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.env.Start()
			if err == nil {
				_ = tc.env.Stop()
				t.Fatal("Start succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
