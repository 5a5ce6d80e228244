package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	pkg := func(p string, deps ...string) Package {
		for i, d := range deps {
			if !strings.Contains(strings.Split(d, "/")[0], ".") { // not a module of its own
				deps[i] = Module + "/" + d
			}
		}
		return Package{ImportPath: Module + "/" + p, Deps: deps}
	}
	tests := []struct {
		name string
		pkg  Package
		want int
	}{
		{"operator on its api", pkg("operators/runtime", "operators/api/v1"), 0},
		{"operator on the sandbox", pkg("operators/echo", "sim/sandbox"), 1},
		{"client-go operator linking controller-runtime", Package{ImportPath: Module + "/operators/clientgo",
			Deps: []string{"sigs.k8s.io/controller-runtime/pkg/client"}}, 1},
		{"screen on the lesson views", pkg("tui/lessonpanel", "lessons/lessonview"), 0},
		{"screen on the lesson engine", pkg("tui", "lessons/lessonview", "lessons"), 1},
		{"screen on the sandbox", pkg("tui/pane", "sim/sandbox"), 1},
		{"screen on the world", pkg("tui/pane", "sim/world"), 0},
		{"engine on a feature", pkg("sim/sandbox", "sim/feature/check"), 1},
		{"feature on the engine", pkg("sim/feature/check", "sim/sandbox"), 0},
		{"engine on the API and the trace", pkg("sim/sandbox", "operators/api/v1", "operators/trace", "operators/echo/instrument"), 0},
		{"engine on an operator", pkg("sim/sandbox", "operators/api/v1", "operators/runtime"), 1},
		{"feature on an operator", pkg("sim/feature/bench", "operators/clientgo"), 1},
		{"feature on a feature", pkg("sim/feature/classroom", "sim/feature/check"), 0},
		{"lessons on the screen", pkg("lessons", "tui/common"), 1},
		{"a command on everything", pkg("cmd/rlab", "cmd/rlab/internal/launch", "tui", "lessons", "sim/sandbox"), 0},
		{"lessons on a command", pkg("lessons", "cmd/rlab/internal/control"), 1},
		{"the course on the engine", pkg("lessons", "sim/sandbox"), 1},
		{"the course on the faults' words", pkg("lessons", "sim/fault"), 0},
		{"the course on the proxy", pkg("lessons", "sim/proxy"), 1},
		{"the course on its runners", pkg("lessons", "lessons/runner"), 1},
		{"the runners on the engine", pkg("lessons/runner", "lessons/actions", "sim/sandbox"), 0},
		{"the checks on the runners", pkg("lessons/checks", "lessons/runner"), 1},
		{"the socket protocol on the course", pkg("cmd/rlab/internal/control", "lessons"), 1},
		{"the socket protocol alone", pkg("cmd/rlab/internal/control"), 0},
		{"a dependency outside the module", Package{ImportPath: "k8s.io/client-go/kubernetes", Deps: []string{Module + "/sim/sandbox"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Check([]Package{tt.pkg}, Rules); len(got) != tt.want {
				t.Fatalf("Check(%s → %v) = %q, want %d broken rules", tt.pkg.ImportPath, tt.pkg.Deps, got, tt.want)
			}
		})
	}
}

func TestCheckLayers(t *testing.T) {
	pkg := func(p string, deps ...string) Package {
		for i, d := range deps {
			deps[i] = Module + "/" + d
		}
		return Package{ImportPath: Module + "/" + p, Deps: deps}
	}
	tests := []struct {
		name string
		pkg  Package
		want bool // broken
	}{
		{"processes on nothing", pkg("sim/proc"), false},
		{"processes on the trace", pkg("sim/proc", "operators/trace"), true},
		{"the proxy on the trace", pkg("sim/proxy", "operators/trace", "operators/style"), false},
		{"the proxy on the world", pkg("sim/proxy", "sim/world"), true},
		{"the sandbox on the engine and the operators' API", pkg("sim/sandbox", "sim/world", "sim/proxy", "operators/api/v1", "operators/shell"), false},
		{"the sandbox on the instrumentation", pkg("sim/sandbox", "operators/echo/instrument"), true},
		{"a feature on the engine", pkg("sim/feature/check", "sim/sandbox", "operators/echo"), false},
		{"the screen on the world and the lesson views", pkg("tui/pane", "sim/world", "lessons/lessonview", "tui/common"), false},
		{"the screen on the proxy", pkg("tui/pane", "sim/proxy"), true},
		{"the lesson views on the trace", pkg("lessons/lessonview", "operators/trace"), true},
		{"the course on the engine", pkg("lessons", "sim/sandbox", "sim/feature/check", "lessons/lessonview"), true},
		{"the course on the operators' domain", pkg("lessons", "operators/echo", "operators/api/v1", "lessons/lessonview"), false},
		{"the checks on the engine and the course", pkg("lessons/checks", "lessons", "sim/world", "sim/sandbox", "sim/feature/check"), false},
		{"the checks on the actions", pkg("lessons/checks", "lessons/actions"), true},
		{"the actions on the checks", pkg("lessons/actions", "lessons", "lessons/checks", "sim/sandbox"), false},
		{"the actions on the runners", pkg("lessons/actions", "lessons/runner"), true},
		{"the runners on the actions", pkg("lessons/runner", "lessons", "lessons/checks", "lessons/actions", "sim/state"), false},
		{"the domain on its API", pkg("operators/echo", "operators/api/v1", "operators/trace", "operators/style"), false},
		{"the API on the domain", pkg("operators/api/v1", "operators/echo"), true},
		{"a command on everything", pkg("cmd/rlab", "tui", "lessons", "sim/sandbox", "operators/runtime"), false},
		{"a script on the engine", pkg("scripts/layers", "sim/proc"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckLayers([]Package{tt.pkg}, Layers); (len(got) > 0) != tt.want {
				t.Fatalf("CheckLayers(%s → %v) = %q, want broken %v", tt.pkg.ImportPath, tt.pkg.Deps, got, tt.want)
			}
		})
	}
}

// TestLayers checks every package of the module against the rules.
func TestLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps", Module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if !slices.ContainsFunc(pkgs, func(p Package) bool { return p.ImportPath == Module+"/operators/clientgo" }) || len(pkgs) < 20 {
		t.Fatalf("go list found %d packages, not the module's", len(pkgs))
	}
	for _, line := range Check(pkgs, Rules) {
		t.Error(line)
	}
	for _, line := range CheckLayers(pkgs, Layers) {
		t.Error(line)
	}
}
