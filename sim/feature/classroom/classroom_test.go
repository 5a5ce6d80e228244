package classroom_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
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
