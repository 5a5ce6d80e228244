package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/cluster/clustertest"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestLateCRDGC: a CRD established after the control plane started gets
// garbage collection within seconds, not after the garbage collector's
// 30 s discovery resync: a ConfigMap owned by a Foo (a CRD of the test's,
// after sample-controller's) goes once its Foo is deleted.
func TestLateCRDGC(t *testing.T) {
	simtest.NeedsControlPlane(t)
	ctx := t.Context()
	ns := clustertest.Namespace(t, shared.cs, "lategc")
	group := fmt.Sprintf("gc%d.rlab-test.example.com", time.Now().UnixNano())
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "foos." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "foos", Singular: "foo", Kind: "Foo", ListKind: "FooList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true)}}}},
		},
	}
	ext := apiextensionsclient.NewForConfigOrDie(shared.backend.Config())
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	simtest.Eventually(t, 30*time.Second, "the Foo CRD established", func(ctx context.Context) (bool, error) {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	established := time.Now()
	foos := shared.dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "foos"}).Namespace(ns)
	var foo *unstructured.Unstructured
	simtest.Eventually(t, 30*time.Second, "a Foo created", func(ctx context.Context) (bool, error) {
		var err error
		foo, err = foos.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Foo", "metadata": map[string]any{"name": "owner"}}}, metav1.CreateOptions{})
		return err == nil, nil
	})
	ref := metav1.OwnerReference{APIVersion: group + "/v1", Kind: "Foo", Name: foo.GetName(), UID: foo.GetUID()}
	if _, err := shared.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{ref}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := foos.Delete(ctx, foo.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	// Well under the resync's 30 s, with room for a busy machine.
	simtest.Eventually(t, 10*time.Second, "the Foo's ConfigMap collected", func(ctx context.Context) (bool, error) {
		_, err := shared.cs.CoreV1().ConfigMaps(ns).Get(ctx, "owned", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// The apiserver holds a create for 2 s while the CRD's Established
	// condition is younger than that (customresource_handler.go, for HA
	// apiservers), so the Foo is deleted about 2 s after it.
	t.Logf("the Foo's ConfigMap was collected %v after its CRD was established, %v after the Foo was deleted",
		time.Since(established).Round(10*time.Millisecond), time.Since(deleted).Round(10*time.Millisecond))
	// Collected because rlab restarted the garbage collector for this CRD,
	// not because its own 30 s resync happened to fall in the window.
	// And the garbage collector that restarted is healthy.
	tl := shared.backend.Timeline()
	restarted, healthy := false, false
	for _, m := range tl.Marks {
		if m.Who == cluster.GarbageCollector {
			t.Logf("%8.3f s after the CRD was established: %s %s", (tl.Began.Add(m.At)).Sub(established).Seconds(), m.Who, m.What)
			if restarted && strings.HasPrefix(m.What, "healthy") {
				healthy = true
			}
			restarted = restarted || strings.Contains(m.What, crd.Name)
		}
	}
	if !restarted || !healthy {
		t.Errorf("no mark of the garbage collector restarted for %s (%v), then healthy (%v): %+v", crd.Name, restarted, healthy, tl.Marks)
	}
	if err := shared.backend.Exited(); err != nil {
		t.Error(err)
	}
}

func ptrTo[T any](v T) *T { return &v }
