package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kkloud/rlab/lessons"
	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
)

// The import line a kubebuilder suite changes to use this package.
const (
	envtestImport = `"sigs.k8s.io/controller-runtime/pkg/envtest"`
	rlabImport    = `envtest "github.com/kkloud/rlab/sim/testenv"`
)

// TestKubebuilderSuite runs a kubebuilder-shaped controller suite
// (testdata/kubebuilder) in lesson 20's project as lesson 22 takes it, twice: on
// controller-runtime's envtest, where the spec that needs the garbage
// collector fails and the other passes, and with the suite's envtest
// import changed to this package, where both pass. The project depends on
// this module through a replace directive, as a student's would.
func TestKubebuilderSuite(t *testing.T) {
	simtest.NeedsControlPlane(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, l, err := lessons.LoadOne(20)
	if err != nil {
		t.Fatal(err)
	}
	// As its step 7 leaves it, as lesson 22 takes it: step 8's finalizer
	// would hold a deleted Echo in a suite that runs no manager.
	final, err := l.Version(6)
	if err != nil {
		t.Fatal(err)
	}
	if err := sandbox.WriteProject(dir, final.Files); err != nil {
		t.Fatal(err)
	}
	// Where `make manifests` writes the CRD; the same as rlab's.
	write(t, filepath.Join(dir, "config", "crd", "bases", "kkloud.io_echoes.yaml"), echov1.CRDYAML)
	for _, f := range []string{"suite_test.go", "echo_controller_test.go"} {
		b, err := os.ReadFile(filepath.Join("testdata", "kubebuilder", f))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "internal", "controller", f), b)
	}
	assets, err := (&Environment{}).assetsDir()
	if err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(dir, "internal", "controller", "suite_test.go")
	stock, err := os.ReadFile(suite)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(stock, []byte(envtestImport)); n != 1 {
		t.Fatalf("suite_test.go imports envtest %d times", n)
	}

	// The diff: one import line, and the module required (a replace
	// directive: this module is not on a proxy).
	write(t, suite, bytes.Replace(stock, []byte(envtestImport), []byte(rlabImport), 1))
	goCmd(t, dir, "mod", "edit", "-require=github.com/kkloud/rlab@v0.0.0", "-replace=github.com/kkloud/rlab="+root)
	goCmd(t, dir, "mod", "tidy")
	out, err := goTest(dir, nil)
	if err != nil {
		t.Fatalf("the suite on rlab's testenv: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Ran 2 of 2 Specs") || !strings.Contains(out, "2 Passed | 0 Failed") {
		t.Errorf("rlab testenv run lacks both specs passing:\n%s", out)
	}

	// envtest, with the same kube-apiserver and etcd: no garbage
	// collector, so the Deployment of a deleted Echo stays.
	write(t, suite, stock)
	out, err = goTest(dir, []string{"KUBEBUILDER_ASSETS=" + assets})
	if err == nil {
		t.Fatalf("the suite passed on envtest, whose control plane has no garbage collector:\n%s", out)
	}
	for _, want := range []string{"[FAIL] Echo controller [It] has the Deployment collected when the Echo is deleted", "Ran 2 of 2 Specs", "1 Passed | 1 Failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("envtest run lacks %q:\n%s", want, out)
		}
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// goTest runs the project's controller suite, verbose, and returns its
// output.
func goTest(dir string, env []string) (string, error) {
	cmd := exec.Command("go", "test", "-count=1", "./internal/controller/", "-v", "-ginkgo.no-color")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
