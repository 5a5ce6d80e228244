package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
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
	at := func(e *Envtest, prefix string) (time.Duration, bool) {
		for _, m := range e.Timeline().Marks {
			if strings.HasPrefix(m.What, prefix) {
				return m.At, true
			}
		}
		return 0, false
	}
	marked := func(e *Envtest, prefix string) bool { _, ok := at(e, prefix); return ok }

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
	// The cluster holds the copy's objects, as the copy has them: no more,
	// no fewer, the same content.
	got, err := readBootstrap(t.Context(), cs)
	if err != nil {
		t.Fatal(err)
	}
	got.Binary = objs.Binary
	if !equality.Semantic.DeepEqual(got, objs) {
		t.Errorf("the cluster's bootstrap RBAC differs from the copy it was made from: %s", differing(objs, got))
	}
	// And the hook wrote none of them, when rlab made them before its
	// first look (a second after serving): on a machine too busy for that,
	// the hook made some itself, and only the content can be checked.
	serving, _ := at(second, "serving")
	made, _ := at(second, "bootstrap RBAC made")
	if made > serving+900*time.Millisecond {
		t.Logf("rlab made the copy %v after the apiserver served, too late to be sure it came first: the writers are not checked", made-serving)
		return
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
	for _, m := range metas {
		for _, f := range m.ManagedFields {
			if f.Manager != bootstrapFieldManager {
				t.Errorf("%s/%s was written by %s (%s) after rlab made it: the copy differs from what the hook makes", m.Namespace, m.Name, f.Manager, f.Operation)
			}
		}
	}
}

// differing names the objects that differ between two sets of the hook's
// objects, or are in one only.
func differing(a, b *bootstrapObjects) string {
	index := func(o *bootstrapObjects) map[string]any {
		m := map[string]any{}
		for _, x := range o.ClusterRoles {
			m["ClusterRole "+x.Name] = x
		}
		for _, x := range o.ClusterRoleBindings {
			m["ClusterRoleBinding "+x.Name] = x
		}
		for _, x := range o.Roles {
			m["Role "+x.Namespace+"/"+x.Name] = x
		}
		for _, x := range o.RoleBindings {
			m["RoleBinding "+x.Namespace+"/"+x.Name] = x
		}
		return m
	}
	ia, ib := index(a), index(b)
	var out []string
	for k, x := range ia {
		if y, ok := ib[k]; !ok || !equality.Semantic.DeepEqual(x, y) {
			out = append(out, k)
		}
	}
	for k := range ib {
		if _, ok := ia[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
