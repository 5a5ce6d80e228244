package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/cluster/clustertest"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestExistingOldCRD: on a cluster whose Echo CRD predates the status fields
// the operators write, Start updates it for an administrator (and a status
// write then sticks), names the cause and the fix for a user who may read
// but not update CRDs, and goes on as before for one who may not read them.
// One that lacks only the spec's CEL rule is updated for an administrator,
// and only warned about for a user who may not update it.
func TestExistingOldCRD(t *testing.T) {
	simtest.NeedsControlPlane(t)
	ext := apiextensionsclient.NewForConfigOrDie(shared.backend.Config())
	reader := crdReader(t)
	const keep = "rlab.test/kept"
	tests := []struct {
		name    string
		user    string // impersonated; "" is the administrator
		old     bool   // start from the older CRD
		noRule  bool   // start from the current CRD without its CEL rule
		wantErr bool   // ErrOldCRD
		warned  bool   // a warning in the log
		updated bool   // the CRD is brought up to date
	}{
		{name: "admin updates", old: true, updated: true},
		{name: "admin, current CRD", old: false},
		{name: "reader told", user: reader, old: true, wantErr: true},
		{name: "may not read", user: "rlab-test-nobody", old: true},
		{name: "admin adds the rule", noRule: true, updated: true},
		{name: "reader warned of the rule", user: reader, noRule: true, warned: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.old:
				installOldCRD(t, ext, map[string]string{keep: "yes"}, oldCRD(t))
			case tc.noRule:
				installOldCRD(t, ext, map[string]string{keep: "yes"}, noRuleCRD(t))
			}
			old := tc.old || tc.noRule
			var logs bytes.Buffer
			e := cluster.NewExisting(cluster.ExistingOptions{
				Path:   kubeconfigAs(t, tc.user),
				Prefix: "rlab-crdtest-",
				Log:    slog.New(slog.NewTextHandler(&logs, nil)),
			})
			err := e.Start(t.Context())
			if tc.wantErr {
				if !errors.Is(err, cluster.ErrOldCRD) {
					t.Fatalf("Start: %v, want ErrOldCRD", err)
				}
				t.Log(err)
				for _, w := range []string{"status.conditions, status.observedGeneration", "rlab crd | kubectl apply -f -", tc.user} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not name %q:\n%v", w, err)
					}
				}
			} else if err != nil {
				t.Fatalf("Start: %v", err)
			}
			if said := strings.Contains(logs.String(), "updated the Echo CRD"); said != tc.updated {
				t.Errorf("logged an update: %v, want %v; logs:\n%s", said, tc.updated, &logs)
			}
			if said := strings.Contains(logs.String(), "may not update it"); said != tc.warned {
				t.Errorf("logged a warning: %v, want %v; logs:\n%s", said, tc.warned, &logs)
			}
			got := echoCRD(t, ext)
			missing, err := cluster.CRDOutdated(got)
			if err != nil {
				t.Fatal(err)
			}
			if uptodate := len(missing) == 0; uptodate != (tc.updated || !old) {
				t.Errorf("after Start the CRD lacks %v (updated %v, old %v)", missing, tc.updated, old)
			}
			if old && got.Labels[keep] != "yes" {
				t.Errorf("CRD labels %v lost %s", got.Labels, keep)
			}
			if tc.updated {
				statusSticks(t)
			}
		})
	}
}

// TestCRDOutdated: which status properties an older CRD lacks.
func TestCRDOutdated(t *testing.T) {
	cur, err := echov1.CRD()
	if err != nil {
		t.Fatal(err)
	}
	keeps := cur.DeepCopy()
	s := keeps.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	s.Properties, s.XPreserveUnknownFields = nil, ptr.To(true)
	keeps.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"] = s
	noStatus := cur.DeepCopy()
	delete(noStatus.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties, "status")
	tests := []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want string
	}{
		{"current", cur, ""},
		{"old", oldCRD(t), "status.conditions status.observedGeneration"},
		{"no status", noStatus, "status.conditions status.observedGeneration status.ready"},
		{"keeps unknown fields", keeps, ""},
		{"no rule", noRuleCRD(t), `spec rule "self.message.size() == 0 || self.message.trim().size() > 0"`},
		{"no replicas 0", crdWith(t, "spec", func(s *apiextensionsv1.JSONSchemaProps) {
			r := s.Properties["replicas"]
			r.Minimum = ptr.To[float64](1)
			s.Properties["replicas"] = r
		}), "spec.replicas minimum 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cluster.CRDOutdated(tc.crd)
			if err != nil || strings.Join(got, " ") != tc.want {
				t.Fatalf("CRDOutdated = %v, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// oldCRD is the Echo CRD as an earlier rlab installed it: no
// status.observedGeneration, no status.conditions.
func oldCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	return crdWith(t, "status", func(s *apiextensionsv1.JSONSchemaProps) {
		delete(s.Properties, "observedGeneration")
		delete(s.Properties, "conditions")
	})
}

// noRuleCRD is the Echo CRD without the CEL rules of its spec, as rlab
// installed it before lesson 16.
func noRuleCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	return crdWith(t, "spec", func(s *apiextensionsv1.JSONSchemaProps) { s.XValidations = nil })
}

// crdWith is the embedded Echo CRD with edit done to the schema of its
// top-level property prop in each version.
func crdWith(t testing.TB, prop string, edit func(*apiextensionsv1.JSONSchemaProps)) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := echov1.CRD()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range crd.Spec.Versions {
		s := v.Schema.OpenAPIV3Schema.Properties[prop]
		edit(&s)
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties[prop] = s
	}
	return crd
}

func echoCRD(t testing.TB, ext apiextensionsclient.Interface) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), echov1.Plural+"."+echov1.Group, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// installOldCRD puts old's schema (and labels) on the cluster's Echo CRD,
// and the current one back when the test ends.
func installOldCRD(t testing.TB, ext apiextensionsclient.Interface, labels map[string]string, old *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	crds := ext.ApiextensionsV1().CustomResourceDefinitions()
	got := echoCRD(t, ext)
	got.Spec.Versions = old.Spec.Versions
	if got.Labels == nil {
		got.Labels = map[string]string{}
	}
	for k, v := range labels {
		got.Labels[k] = v
	}
	if _, err := crds.Update(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cur, err := echov1.CRD()
		if err != nil {
			t.Fatal(err)
		}
		got, err := crds.Get(context.Background(), cur.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Spec.Versions = cur.Spec.Versions
		for k := range labels {
			delete(got.Labels, k)
		}
		if _, err := crds.Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// statusSticks: the Echo CRD keeps status.observedGeneration.
func statusSticks(t *testing.T) {
	t.Helper()
	clustertest.StatusSticks(t, shared.cs, shared.dyn)
}

// crdReader is a user who may get CRDs and nothing more of them, for the
// test's duration.
func crdReader(t testing.TB) string {
	t.Helper()
	const name = "rlab-test-crd-reader"
	rbac := shared.cs.RbacV1()
	if _, err := rbac.ClusterRoles().Create(t.Context(), &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{apiextensionsv1.GroupName}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// kubeconfigAs is the backend's admin kubeconfig in a file, impersonating
// user unless it is "".
func kubeconfigAs(t testing.TB, user string) string {
	t.Helper()
	cfg, err := clientcmd.Load(shared.backend.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
	return file
}
