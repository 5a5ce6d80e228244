package classroom_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/cluster/clustertest"
	"github.com/kkloud/rlab/sim/feature/classroom"
	"github.com/kkloud/rlab/sim/simtest"
)

// shared is the control plane the tests use, with the current Echo CRD
// installed by the backend (no classroom label).
var shared struct {
	cfg *rest.Config
	cs  kubernetes.Interface
	dyn dynamic.Interface
	ext apiextensionsclient.Interface
}

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, "classroom-test", func(env *clustertest.Env) {
		shared.cfg = env.Config()
		shared.cs = kubernetes.NewForConfigOrDie(shared.cfg)
		shared.dyn = dynamic.NewForConfigOrDie(shared.cfg)
		shared.ext = apiextensionsclient.NewForConfigOrDie(shared.cfg)
	}))
}

// TestPrepareOldCRD: prepare brings an older Echo CRD up to date, so that
// the operators' status sticks, and leaves its labels alone: teardown keeps
// a CRD that was there before the classroom and removes one prepare made.
func TestPrepareOldCRD(t *testing.T) {
	simtest.NeedsControlPlane(t)
	tests := []struct {
		name  string
		label string // classroom label on the old CRD: "crd" if prepare made it
		kept  bool   // by teardown
	}{
		{name: "there before", kept: true},
		{name: "prepare made it", label: "crd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			installOldCRD(t, tc.label)
			var out bytes.Buffer
			if _, err := classroom.Prepare(t.Context(), shared.cfg, classroom.Options{Students: 1, Dir: t.TempDir(), Log: &out}); err != nil {
				t.Fatalf("prepare: %v", err)
			}
			if want := "updated the Echo CRD: added status.conditions, status.observedGeneration"; !strings.Contains(out.String(), want) {
				t.Errorf("prepare did not say %q:\n%s", want, &out)
			}
			got := echoCRD(t)
			if missing, err := cluster.CRDOutdated(got); err != nil || len(missing) > 0 {
				t.Errorf("after prepare the CRD lacks %v (%v)", missing, err)
			}
			if l := got.Labels[classroom.LabelClassroom]; l != tc.label {
				t.Errorf("after prepare the CRD has label %s=%q, want %q", classroom.LabelClassroom, l, tc.label)
			}
			statusSticks(t)

			out.Reset()
			if err := classroom.Teardown(t.Context(), shared.cfg, &out); err != nil {
				t.Fatalf("teardown: %v", err)
			}
			_, err := shared.ext.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), got.Name, metav1.GetOptions{})
			if kept := err == nil; kept != tc.kept {
				t.Errorf("teardown kept the CRD: %v (%v), want %v; it said:\n%s", kept, err, tc.kept, &out)
			}
		})
	}
}

func echoCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	got, err := shared.ext.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), echov1.Plural+"."+echov1.Group, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// installOldCRD gives the cluster's Echo CRD the schema of an earlier rlab
// (no status.observedGeneration, no status.conditions) and the classroom
// label if not "", and puts the current one back, unlabelled, when the test
// ends.
func installOldCRD(t testing.TB, label string) {
	t.Helper()
	crds := shared.ext.ApiextensionsV1().CustomResourceDefinitions()
	got := echoCRD(t)
	for i, v := range got.Spec.Versions {
		s := v.Schema.OpenAPIV3Schema.Properties["status"]
		delete(s.Properties, "observedGeneration")
		delete(s.Properties, "conditions")
		got.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["status"] = s
	}
	if label != "" {
		if got.Labels == nil {
			got.Labels = map[string]string{}
		}
		got.Labels[classroom.LabelClassroom] = label
	}
	if _, err := crds.Update(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		cur, err := echov1.CRD()
		if err != nil {
			t.Fatal(err)
		}
		got, err := crds.Get(ctx, cur.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = crds.Create(ctx, cur, metav1.CreateOptions{})
		} else if err == nil {
			got.Spec.Versions = cur.Spec.Versions
			delete(got.Labels, classroom.LabelClassroom)
			_, err = crds.Update(ctx, got, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := cluster.Poll(ctx, 30*time.Second, "the Echo CRD served", func(ctx context.Context) (bool, error) {
			_, err := shared.dyn.Resource(echov1.Resource).Namespace("default").List(ctx, metav1.ListOptions{})
			return err == nil, nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

// statusSticks: the Echo CRD keeps status.observedGeneration.
func statusSticks(t *testing.T) {
	t.Helper()
	clustertest.StatusSticks(t, shared.cs, shared.dyn)
}

// TestPrepareQuota: prepare's capacity plan and quota on a real control
// plane (kwok's four Nodes of 1000 pods). A dry run and a class that does
// not fit make nothing; a class that fits gets, in each namespace, a
// ResourceQuota the apiserver enforces and a LimitRange; a quota that is
// not prepare's is refused by name.
func TestPrepareQuota(t *testing.T) {
	simtest.NeedsControlPlane(t)
	needs := []classroom.Need{{Lesson: 1, Title: "small", Echoes: 2, Pods: 4}}
	ns := classroom.Prefix(classroom.Student(1)).Namespace(style.Shell)
	t.Cleanup(func() { _ = classroom.Teardown(context.Background(), shared.cfg, io.Discard) })
	absent := func(what string) {
		t.Helper()
		if _, err := shared.cs.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: namespace %s: %v, want none", what, ns, err)
		}
	}

	var out bytes.Buffer
	if _, err := classroom.Prepare(t.Context(), shared.cfg, classroom.Options{Students: 2, Dir: t.TempDir(), Log: &out, Needs: needs, DryRun: true}); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	for _, want := range []string{"cluster: 4 Nodes, all kwok's", "1 small", "2 students fit", "quota rlab-student in each of a student's 3 namespaces: 7 Echoes, 7 Deployments, 10 ConfigMaps, 8 pods, 80m CPU and 128Mi memory"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run: no %q in\n%s", want, &out)
		}
	}
	absent("dry run")

	big := []classroom.Need{{Lesson: 11, Title: "big", Echoes: 101, Pods: 2000}}
	_, err := classroom.Prepare(t.Context(), shared.cfg, classroom.Options{Students: 1, Dir: t.TempDir(), Log: io.Discard, Needs: big})
	if err == nil || !strings.Contains(err.Error(), "1 students do not fit this cluster") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("a class that does not fit: %v", err)
	}
	absent("a class that does not fit")

	if _, err := classroom.Prepare(t.Context(), shared.cfg, classroom.Options{Students: 1, Dir: t.TempDir(), Log: io.Discard, Needs: needs}); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	q, err := shared.cs.CoreV1().ResourceQuotas(ns).Get(t.Context(), classroom.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := q.Spec.Hard[corev1.ResourcePods]; p.Value() != 8 {
		t.Errorf("quota pods %s, want 8", p.String())
	}
	if _, err := shared.cs.CoreV1().LimitRanges(ns).Get(t.Context(), classroom.QuotaName, metav1.GetOptions{}); err != nil {
		t.Errorf("limit range: %v", err)
	}
	// The eighth Echo is one beyond the quota's seven: the apiserver says so.
	echoes := shared.dyn.Resource(echov1.Resource).Namespace(ns)
	for i := 1; ; i++ {
		e := &unstructured.Unstructured{Object: map[string]any{"apiVersion": echov1.Group + "/" + echov1.Version, "kind": echov1.Kind,
			"metadata": map[string]any{"name": fmt.Sprintf("q%d", i)}, "spec": map[string]any{"message": "m", "replicas": int64(1)}}}
		_, err := echoes.Create(t.Context(), e, metav1.CreateOptions{})
		if err == nil && i <= 7 {
			continue
		}
		if i != 8 || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: "+classroom.QuotaName) {
			t.Fatalf("Echo %d: %v, want the 8th refused by quota %s", i, err, classroom.QuotaName)
		}
		break
	}

	// Pods beyond the quota: the Deployment says so in its ReplicaFailure
	// condition, which the world reads (DeploymentView.Refused) and a
	// failing lesson check quotes.
	labels := map[string]string{"app": "over"}
	nine := int32(9)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "over", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &nine, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "echo"}}}}}}
	if _, err := shared.cs.AppsV1().Deployments(ns).Create(t.Context(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	simtest.Eventually(t, time.Minute, "the Deployment's ReplicaFailure condition names the quota", func(ctx context.Context) (bool, error) {
		d, err := shared.cs.AppsV1().Deployments(ns).Get(ctx, "over", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "exceeded quota: "+classroom.QuotaName) {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", d.Status.Conditions)
	})
	if err := shared.cs.AppsV1().Deployments(ns).Delete(t.Context(), "over", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Prepared again (an earlier class's namespaces, or fresh tokens), the
	// namespaces are kept as they are, and prepare says what is in them.
	out.Reset()
	if _, err := classroom.Prepare(t.Context(), shared.cfg, classroom.Options{Students: 1, Dir: t.TempDir(), Log: &out, Needs: needs}); err != nil {
		t.Fatalf("prepare again: %v", err)
	}
	if want := "s1: kept from an earlier prepare, as they are: " + ns + " (7 Echoes)"; !strings.Contains(out.String(), want) {
		t.Errorf("prepare again: no %q in\n%s", want, &out)
	}
	if list, err := echoes.List(t.Context(), metav1.ListOptions{}); err != nil || len(list.Items) != 7 {
		t.Errorf("after prepare again: %v Echoes (%v), want the 7 kept", len(list.Items), err)
	}

	// Someone else's quota in a student's namespace is named, and kept.
	other := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "team-limit", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
	if _, err := shared.cs.CoreV1().ResourceQuotas(ns).Create(t.Context(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = classroom.Prepare(t.Context(), shared.cfg, classroom.Options{Students: 1, Dir: t.TempDir(), Log: io.Discard, Needs: needs})
	if err == nil || !strings.Contains(err.Error(), "holds ResourceQuota team-limit, which prepare did not make") {
		t.Errorf("prepare over someone else's quota: %v", err)
	}
	if _, err := shared.cs.CoreV1().ResourceQuotas(ns).Get(t.Context(), "team-limit", metav1.GetOptions{}); err != nil {
		t.Errorf("someone else's quota: %v, want it kept", err)
	}
}
