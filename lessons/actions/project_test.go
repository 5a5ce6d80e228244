package actions

import (
	"bytes"
	"context"
	"fmt"
	"go/format"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestProjectVersions: every version of a lesson's Go project (its starter,
// and the project as each step's fix leaves it) is gofmt'd, builds and
// passes go vet as a module of its own, offline (GOPROXY=off) from the
// module cache that building rlab filled, with its go.sum as it is
// (-mod=readonly); it asks for the versions rlab's go.mod has, and the
// starter marks each step's gap with TODO(lesson N, step K), which the last
// version has none of.
func TestProjectVersions(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("no go on PATH: %v", err)
	}
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	rlabMod := readModFile(t, filepath.Join("..", "..", "go.mod"))
	projects := 0
	for _, l := range all {
		if l.Operator == nil || !l.Operator.Starter.IsProject() {
			continue
		}
		projects++
		versions := []lessons.File{l.Operator.Starter}
		gaps := map[int]bool{}
		for i := range l.Steps {
			f, err := l.Version(i)
			if err != nil {
				t.Fatal(err)
			}
			if f.Name != versions[len(versions)-1].Name {
				versions = append(versions, f)
				gaps[i+1] = true
			}
		}
		starter, last := versions[0], versions[len(versions)-1]
		todo := regexp.MustCompile(fmt.Sprintf(`TODO\(lesson %d, step (\d+)\)`, l.Number))
		marked := map[int]bool{}
		for _, data := range starter.Files {
			for _, m := range todo.FindAllSubmatch(data, -1) {
				var k int
				fmt.Sscan(string(m[1]), &k)
				marked[k] = true
			}
		}
		for k := range gaps {
			if !marked[k] {
				t.Errorf("%s: step %d fixes a gap the starter does not mark TODO(lesson %d, step %d)", l.Dir, k, l.Number, k)
			}
		}
		for k := range marked {
			if !gaps[k] {
				t.Errorf("%s: the starter marks a gap for step %d, which swaps in no fix", l.Dir, k)
			}
		}
		for p, data := range last.Files {
			if todo.Match(data) {
				t.Errorf("%s: %s as the last step leaves it still has a TODO", l.Dir, p)
			}
		}
		// A project_test's broken version, laid over the project as its
		// step leaves it, builds: its tests must fail, not fail to build.
		for i, step := range l.Steps {
			if step.Check == nil {
				continue
			}
			for _, c := range step.Check.Conds {
				if broken := c.Args.File("fails_with"); broken.Name != "" {
					at, err := l.Version(i)
					if err != nil {
						t.Fatal(err)
					}
					versions = append(versions, lessons.File{Name: broken.Name, Files: overlay(at.Files, broken.Files)})
				}
			}
		}
		for _, v := range versions {
			t.Run(l.Dir+"/"+v.Name, func(t *testing.T) {
				dir := t.TempDir()
				if err := sandbox.WriteProject(dir, v.Files); err != nil {
					t.Fatal(err)
				}
				for p, data := range v.Files {
					if !strings.HasSuffix(p, ".go") {
						continue
					}
					if got, err := format.Source(data); err != nil || !bytes.Equal(got, data) {
						t.Errorf("%s is not gofmt'd (%v)", p, err)
					}
				}
				projMod := readModFile(t, filepath.Join(dir, "go.mod"))
				for path, v := range projMod {
					if want, ok := rlabMod[path]; ok && want != v {
						t.Errorf("go.mod asks for %s %s, rlab is built with %s", path, v, want)
					}
				}
				for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}} {
					cmd := exec.Command("go", args...)
					cmd.Dir = dir
					cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off")
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), v.Name, err, out)
					}
				}
			})
		}
	}
	if projects == 0 {
		t.Fatal("no lesson has a Go project")
	}
}

// overlay is files with over laid over them.
func overlay(files, over map[string][]byte) map[string][]byte {
	out := maps.Clone(files)
	maps.Copy(out, over)
	return out
}

// readModFile is the modules a go.mod requires, path → version.
func readModFile(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "require" && f[1] == "(":
			in = true
		case len(f) == 1 && f[0] == ")":
			in = false
		case in && len(f) == 2:
			out[f[0]] = f[1]
		case len(f) == 3 && f[0] == "require":
			out[f[1]] = f[2]
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s requires nothing", file)
	}
	return out
}

// TestProjectStopsOnEdit: lesson 20's manager, run from its project's
// folder, stops by itself (exit 0) once a .go file there changes, and not
// before, so that rlab runs go run ./cmd again on the new version. The
// apiserver it is given does not answer: the manager runs on, retrying.
func TestProjectStopsOnEdit(t *testing.T) {
	_, l, err := lessons.LoadOne(20)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := sandbox.WriteProject(dir, l.Operator.Starter.Files); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "manager")
	build := exec.Command("go", "build", "-o", bin, "./cmd")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out simtest.Buffer
	cmd := exec.Command(bin)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &out
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	simtest.Eventually(t, 30*time.Second, "the manager starting", func(context.Context) (bool, error) {
		return strings.Contains(out.String(), "Starting manager"), nil
	})
	select {
	case err := <-exited:
		t.Fatalf("the manager exited before any edit (%v):\n%s", err, out.String())
	case <-time.After(2 * time.Second):
	}
	// A save, seen by its modification time.
	file := filepath.Join(dir, "internal", "controller", "echo_controller.go")
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the manager exited with %v after the edit, want 0:\n%s", err, out.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the manager still runs 15s after the edit:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "Source changed") {
		t.Errorf("the manager did not say why it stopped:\n%s", out.String())
	}
}
