package check_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/feature/check"
	"github.com/kkloud/rlab/sim/rbac"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/sim/tenancy"
)

// TestOwnRBAC runs one sandbox on envtest with two custom operators that
// each list Echoes across all namespaces, as a manager that caches every
// namespace does: "granted" with a kubebuilder-shaped config/rbac (--rbac),
// "course" with the course's Role. The first is answered 200, the second
// 403, and privilege says why for each; the ClusterRoles and bindings the
// sandbox made are deleted when it stops.
func TestOwnRBAC(t *testing.T) {
	simtest.NeedsControlPlane(t)
	// envtest's CRD installer logs through controller-runtime, which warns
	// with a stack trace if no logger was ever set.
	ctrllog.SetLogger(logr.Discard())
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	g, err := rbac.Load(filepath.Join("..", "..", "rbac", "testdata", "kubebuilder", "config", "rbac"))
	if err != nil {
		t.Fatal(err)
	}
	// The operator's own request, through its proxy; then it idles.
	const op = "kubectl get echoes --all-namespaces; exec sleep 600"
	granted, course := style.Style("granted"), style.Style("course")
	b := bus.New()
	recs := map[style.Style]*check.RequestLog{granted: check.NewRequestLog(b, granted), course: check.NewRequestLog(b, course)}
	for _, r := range recs {
		defer r.Close()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Options{
		State: state.Dir{Root: t.TempDir()}, Assets: dir, Bus: b,
		Custom: []sandbox.Custom{{Name: granted, Command: op, RBAC: g}, {Name: course, Command: op}},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = sb.Stop()
		}
	}()

	// What the sandbox made: the ClusterRoles, named after the namespace
	// and bound cluster-wide; the leader election Role in the namespace;
	// and no course Role binding.
	ns := sb.Namespace(granted)
	kube := sb.Admin().Kube()
	made := []string{rbac.ClusterRoleName(ns, "metrics-auth-role"), rbac.ClusterRoleName(ns, "manager-role")}
	for _, name := range made {
		if _, err := kube.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ClusterRole %s: %v", name, err)
		}
		crb, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(crb.Subjects) != 1 || crb.Subjects[0].Name != granted.Operator() || crb.Subjects[0].Namespace != ns {
			t.Errorf("ClusterRoleBinding %s: %+v, %v; want it to bind %s/%s", name, crb, err, ns, granted.Operator())
		}
	}
	if _, err := kube.RbacV1().Roles(ns).Get(ctx, "leader-election-role", metav1.GetOptions{}); err != nil {
		t.Errorf("Role leader-election-role in %s: %v", ns, err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Get(ctx, sandbox.RoleName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding %s in %s: %v, want none: the operator's own RBAC replaces the course's Role", sandbox.RoleName, ns, err)
	}

	// The operators' own list across all namespaces, as their proxies saw it.
	listAll := func(st style.Style) int {
		for _, q := range recs[st].Requests(time.Time{}) {
			if q.Verb == "list" && q.Resource == "echoes" && q.Namespace == "" && q.Code != 0 {
				return q.Code
			}
		}
		return 0
	}
	simtest.Eventually(t, 90*time.Second, "both operators to list Echoes across all namespaces",
		simtest.True(func() bool { return listAll(granted) != 0 && listAll(course) != 0 }))
	if got := listAll(granted); got != 200 {
		t.Errorf("granted its own RBAC: list echoes across all namespaces answered %d, want 200", got)
	}
	if got := listAll(course); got != 403 {
		t.Errorf("under the course's Role: list echoes across all namespaces answered %d, want 403", got)
	}

	// privilege, with the cluster's own discovery telling the scopes.
	for _, tt := range []struct {
		st   style.Style
		g    *rbac.Grant
		pass bool
		want []string
	}{
		{granted, g, true, []string{"none denied, none beyond what the course needs", "declared, never used: ",
			"create echoes", "create tokenreviews", "used across all namespaces: list echoes"}},
		{course, nil, false, []string{"denied: list echoes (all namespaces) ×1", "or grade the operator with its own RBAC (--rbac)"}},
	} {
		rs, err := check.Run(ctx, check.Sandbox(sb), recs[tt.st], check.Options{Operator: tt.st, Only: []string{check.Privilege}, RBAC: tt.g})
		if err != nil {
			t.Fatal(err)
		}
		r := rs[0]
		t.Logf("privilege of %s: pass=%v: %s", tt.st, r.Pass, r.Reason)
		if r.Pass != tt.pass {
			t.Errorf("privilege of %s pass = %v, want %v", tt.st, r.Pass, tt.pass)
		}
		for _, w := range tt.want {
			if !strings.Contains(r.Reason, w) {
				t.Errorf("privilege of %s: reason does not say %q", tt.st, w)
			}
		}
	}

	// Gone at Stop: seen deleted before the cluster went.
	deleted := watchDeleted(t, kube)
	stopped = true
	if err := sb.Stop(); err != nil {
		t.Fatal(err)
	}
	got := deleted()
	for _, name := range made {
		for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
			if !slices.Contains(got, kind+"/"+name) {
				t.Errorf("%s %s was not deleted at Stop (deleted: %v)", kind, name, got)
			}
		}
	}
}

// watchDeleted watches rlab's ClusterRoles and ClusterRoleBindings until
// the cluster goes; the func it returns waits for that and lists what was
// deleted, as "Kind/name".
func watchDeleted(t *testing.T, kube kubernetes.Interface) func() []string {
	t.Helper()
	opts := metav1.ListOptions{LabelSelector: tenancy.LabelManagedBy + "=" + tenancy.ManagedByRlab}
	crs, err := kube.RbacV1().ClusterRoles().Watch(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	crbs, err := kube.RbacV1().ClusterRoleBindings().Watch(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		got []string
		wg  sync.WaitGroup
	)
	for kind, w := range map[string]watch.Interface{"ClusterRole": crs, "ClusterRoleBinding": crbs} {
		wg.Go(func() {
			for ev := range w.ResultChan() {
				if m, ok := ev.Object.(metav1.Object); ok && ev.Type == watch.Deleted {
					mu.Lock()
					got = append(got, kind+"/"+m.GetName())
					mu.Unlock()
				}
			}
		})
	}
	return func() []string {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second): // the cluster is gone: its watches end
			crs.Stop()
			crbs.Stop()
			<-done
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// TestOwnRBACRefused: a grant the sandbox cannot honour is refused before
// anything starts (no cluster: the state dir is not even taken).
func TestOwnRBACRefused(t *testing.T) {
	g := &rbac.Grant{Path: "role.yaml", Cluster: []rbac.Role{{Kind: rbac.KindClusterRole, Name: "manager-role"}}}
	tests := []struct {
		name string
		c    sandbox.Custom
		want string
	}{
		{"with namespace-admin", sandbox.Custom{Name: "mine", Command: "true", RBAC: g, Role: sandbox.RoleNamespaceAdmin},
			"operator mine: its own RBAC and role namespace-admin exclude each other"},
		{"granting nothing", sandbox.Custom{Name: "mine", Command: "true", RBAC: &rbac.Grant{Path: "empty.yaml"}},
			"operator mine: its RBAC (empty.yaml) grants no role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			sb, err := sandbox.Start(t.Context(), sandbox.Options{State: state.Dir{Root: root}, Custom: []sandbox.Custom{tt.c}})
			if err == nil {
				_ = sb.Stop()
				t.Fatalf("Start succeeded, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start: %v, want it to say %q", err, tt.want)
			}
			if entries, _ := os.ReadDir(root); len(entries) > 0 {
				t.Errorf("the state dir holds %d entries: something started", len(entries))
			}
		})
	}
}
