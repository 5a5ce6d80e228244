package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/kkloud/rlab/sim/feature/check"
	"github.com/kkloud/rlab/sim/rbac"
	"github.com/kkloud/rlab/sim/simtest"
)

// kubebuilderDir is the controller-runtime operator laid out as a
// kubebuilder v4 project, relative to this package.
var kubebuilderDir = filepath.Join("..", "..", "testdata", "operators", "kubebuilder")

// kubebuilderBuilds builds the fixture's managers, each once per test:
// "cmd" is the stock main.go, "cmd/fixed" the one with the namespace fix.
type kubebuilderBuilds struct {
	dir   string
	built map[string]string
}

func (b *kubebuilderBuilds) bin(t *testing.T, pkg string) string {
	t.Helper()
	if p, ok := b.built[pkg]; ok {
		return p
	}
	out := filepath.Join(b.dir, strings.ReplaceAll(pkg, "/", "-"))
	build := exec.CommandContext(t.Context(), "go", "build", "-o", out, "./"+pkg)
	build.Dir = kubebuilderDir // inside rlab's module: its go.mod, its controller-runtime
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./%s in %s: %v\n%s", pkg, kubebuilderDir, err, msg)
	}
	b.built[pkg] = out
	return out
}

// freePort is a TCP port on 127.0.0.1 that nothing listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// perReplicaProbe is the shell line that runs bin with args and a health
// probe port of each replica's own, chosen by $POD_NAME (NAME-a, NAME-b),
// as a student runs two managers on one machine.
func perReplicaProbe(t *testing.T, bin string, args ...string) string {
	t.Helper()
	a := freePort(t)
	b := freePort(t)
	for b == a {
		b = freePort(t)
	}
	return fmt.Sprintf(`case "$POD_NAME" in *-a) port=%d ;; *) port=%d ;; esac; exec %s %s --health-probe-bind-address=127.0.0.1:$port`,
		a, b, bin, strings.Join(args, " "))
}

// TestCheckKubebuilder grades the controller-runtime operator of
// testdata/operators/kubebuilder, in the layout and with the main.go flags a
// student gets from kubebuilder, as rlab check runs a student's own
// operator. Each case runs in a sandbox of its own, and the test beside
// TestClassroom.
func TestCheckKubebuilder(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	builds := &kubebuilderBuilds{dir: t.TempDir(), built: map[string]string{}}
	tests := []struct {
		name    string
		pkg     string                                // the main package: cmd or cmd/fixed
		flags   []string                              // rlab check's, before the command
		command func(t *testing.T, bin string) string // the operator's command line
		passed  bool
		checks  map[string]checkWant
		within  float64 // the report's bound, as in TestCheck
	}{
		{
			// The manager caches every namespace; the course's Role is in
			// one. (Its probe is off only so that no other test's port is
			// in the way.)
			name: "stock under the course's Role", pkg: "cmd",
			command: func(t *testing.T, bin string) string { return bin + " --health-probe-bind-address=0" },
			within:  60,
			checks: map[string]checkWant{
				check.Deployment: {reason: "it was denied list "},
				check.Owner:      {reason: "not checked: see deployment"},
				check.Privilege:  {reason: "(all namespaces)"},
			},
		},
		{
			name: "stock with its own RBAC", pkg: "cmd",
			flags:   []string{"--rbac", filepath.Join(kubebuilderDir, "config", "rbac")},
			command: func(t *testing.T, bin string) string { return bin + " --health-probe-bind-address=0" },
			passed:  true,
		},
		{
			// controller-runtime's Lease lasts 15 s: a failover takes 16–21 s.
			name: "fixed replicas 2 probe port per replica", pkg: "cmd/fixed",
			flags: []string{"--replicas", "2", "--within", "45s"},
			command: func(t *testing.T, bin string) string {
				return perReplicaProbe(t, bin, "--leader-elect")
			},
			passed: true,
			checks: map[string]checkWant{check.Leader: {pass: true}, check.Failover: {pass: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := builds.bin(t, tt.pkg)
			r := runCheck(t, append(slices.Clone(tt.flags), tt.command(t, bin))...)
			r.wantPassed(t, tt.passed)
			r.wantEarly(t, tt.within, "")
			if tt.passed {
				r.allRan(t)
			}
			r.want(t, tt.checks)
			if d := r.got[check.Deployment]; tt.name == "stock under the course's Role" &&
				!(strings.Contains(d.Reason, "restrict it to $WATCH_NAMESPACE") && strings.Contains(d.Reason, `at the cluster scope"`)) {
				t.Errorf("deployment's reason %q: want the cluster-scope cause, quoting the manager's log", d.Reason)
			}
		})
	}
}

// TestKubebuilderRoleMatchesMarkers: the fixture's config/rbac/role.yaml is
// what controller-gen makes of the +kubebuilder:rbac markers above its
// reconciler, compared verb by verb, so that grading with the project's
// own RBAC grades what its code declares.
func TestKubebuilderRoleMatchesMarkers(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(kubebuilderDir, "internal", "controller", "echo_controller.go"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := rbac.Markers(src)
	if err != nil {
		t.Fatal(err)
	}
	fromMarkers := map[string]bool{}
	for _, r := range rules {
		for _, p := range permissions(r) {
			fromMarkers[p] = true
		}
	}
	raw, err := os.ReadFile(filepath.Join(kubebuilderDir, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(raw, &role); err != nil {
		t.Fatal(err)
	}
	if role.Kind != "ClusterRole" || role.Name != "manager-role" {
		t.Fatalf("role.yaml is %s %s, want ClusterRole manager-role", role.Kind, role.Name)
	}
	fromYAML := map[string]bool{}
	for _, r := range role.Rules {
		for _, p := range permissions(r) {
			fromYAML[p] = true
		}
	}
	if len(fromMarkers) == 0 {
		t.Fatal("no +kubebuilder:rbac marker found")
	}
	for p := range fromMarkers {
		if !fromYAML[p] {
			t.Errorf("a marker grants %s, role.yaml does not", p)
		}
	}
	for p := range fromYAML {
		if !fromMarkers[p] {
			t.Errorf("role.yaml grants %s, no marker does", p)
		}
	}
}

// permissions spells a rule out as "verb group/resource", one per pair.
func permissions(r rbacv1.PolicyRule) []string {
	var out []string
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				out = append(out, v+" "+g+"/"+res)
			}
		}
	}
	return out
}

// TestCheckLessonProject grades lesson 20's Go project as its step 7
// leaves it, the way that step tells the student to: from the folder rlab
// lesson starter wrote, rlab check -- go run ./cmd, offline (the modules
// from the cache that building rlab filled). Beside TestClassroom.
func TestCheckLessonProject(t *testing.T) {
	simtest.NeedsControlPlane(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "echo-go")
	if out, err := exec.Command(rlabBin, "lesson", "starter", "20", "--step", "7", "-o", dir).CombinedOutput(); err != nil {
		t.Fatalf("rlab lesson starter 20 --step 7: %v\n%s", err, out)
	}
	r := runCheck(t, "cd "+dir+" && GOPROXY=off GOFLAGS=-mod=readonly exec go run ./cmd")
	r.wantPassed(t, true)
	r.allRan(t)
	r.want(t, map[string]checkWant{check.Conditions: {pass: true}}) // informative, and the project's step 6
}
