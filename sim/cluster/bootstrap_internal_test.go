package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestBootstrapSeeded: the first start of a control plane keeps a copy of
// the RBAC objects the apiserver's hook made; the next start makes them
// from it as the apiserver serves, and the hook, which reconciles every one
// of them before /healthz passes, finds nothing to change: no object
// carries a write of the apiserver's.
func TestBootstrapSeeded(t *testing.T) {
	simtest.NeedsControlPlane(t)
	real, err := assets.Find(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	// The same binaries in a directory of the test's, so that the first
	// start finds no copy.
	dir := t.TempDir()
	bins, err := os.ReadDir(real)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bins {
		if b.Name() == bootstrapCache {
			continue
		}
		if err := os.Symlink(filepath.Join(real, b.Name()), filepath.Join(dir, b.Name())); err != nil {
			t.Fatal(err)
		}
	}
	start := func() *Envtest {
		root := t.TempDir()
		e := NewEnvtest(EnvtestOptions{Assets: dir, RunDir: filepath.Join(root, "run"),
			LogDir: filepath.Join(root, "logs"), PIDDir: filepath.Join(root, "pids")})
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := e.Stop(); err != nil {
				t.Error(err)
			}
		})
		return e
	}
	marked := func(e *Envtest, prefix string) bool {
		return slices.ContainsFunc(e.Timeline().Marks, func(m Mark) bool { return strings.HasPrefix(m.What, prefix) })
	}

	first := start()
	if marked(first, "bootstrap RBAC made") {
		t.Fatal("the first start made the bootstrap RBAC from a copy it cannot have had")
	}
	objs, cached := loadBootstrap(dir)
	if !cached {
		t.Fatalf("the first start left no copy of the hook's objects in %s", dir)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	second := start()
	if !marked(second, "bootstrap RBAC made") {
		t.Fatalf("the second start did not make the bootstrap RBAC from the copy: %+v", second.Timeline().Marks)
	}
	cs, err := kubernetes.NewForConfig(second.Config())
	if err != nil {
		t.Fatal(err)
	}
	list := metav1.ListOptions{LabelSelector: bootstrapLabel}
	var metas []metav1.ObjectMeta
	crs, err := cs.RbacV1().ClusterRoles().List(t.Context(), list)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range crs.Items {
		metas = append(metas, x.ObjectMeta)
	}
	crbs, err := cs.RbacV1().ClusterRoleBindings().List(t.Context(), list)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range crbs.Items {
		metas = append(metas, x.ObjectMeta)
	}
	rs, err := cs.RbacV1().Roles("").List(t.Context(), list)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range rs.Items {
		metas = append(metas, x.ObjectMeta)
	}
	rbs, err := cs.RbacV1().RoleBindings("").List(t.Context(), list)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range rbs.Items {
		metas = append(metas, x.ObjectMeta)
	}
	if len(metas) != objs.count() {
		t.Errorf("%d bootstrap objects in the cluster, %d in the copy", len(metas), objs.count())
	}
	for _, m := range metas {
		for _, f := range m.ManagedFields {
			// The aggregation controller fills the aggregated roles' rules:
			// that is kube-controller-manager's write, not the hook's.
			if f.Manager != bootstrapFieldManager && f.Manager != "kube-controller-manager" {
				t.Errorf("%s/%s was written by %s (%s) after rlab made it: the copy differs from what the hook makes", m.Namespace, m.Name, f.Manager, f.Operation)
			}
		}
	}
}
