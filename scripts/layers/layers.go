// Package layers holds the import rules ARCHITECTURE.md names, and checks
// them against the packages' import graph. Its test fails when an import
// crosses a layer: `go test ./scripts/layers/`.
package layers

import (
	"fmt"
	"slices"
	"strings"
)

// Module is rlab's module path.
const Module = "github.com/kkloud/rlab"

// Rule forbids every package under From (a path below Module; "" is every
// package) to depend, directly or through others, on a package under one of
// Not. Except lists packages under From the rule does not hold for, and
// Allow packages under Not that may be depended on all the same.
type Rule struct {
	From   string
	Not    []string
	Except []string
	Allow  []string
	Why    string
}

// Rules are the layers, as ARCHITECTURE.md draws them.
var Rules = []Rule{
	{From: "operators", Not: []string{"sim", "tui", "lessons"},
		Why: "operators never import sim: they are what a student could have written, and run outside rlab"},
	{From: "operators/clientgo", Not: []string{"sigs.k8s.io/controller-runtime"},
		Why: "the raw client-go operator shows client-go alone"},
	{From: "sim", Not: []string{"tui", "lessons"},
		Why: "the engine knows no screen and no lesson"},
	{From: "sim", Except: []string{"sim/feature"}, Not: []string{"sim/feature"},
		Why: "the engine (cluster, proxies, supervisor, world, sandbox) is not built on the features that use it"},
	{From: "sim", Not: []string{"operators"},
		Allow: []string{"operators/api/v1", "operators/echo", "operators/shell", "operators/style", "operators/trace"},
		Why:   "the engine runs the operators as programs: it links their API, their shared domain, the bash loop's script, the styles and the trace schema, never a Go operator (nor controller-runtime through one)"},
	{From: "tui", Not: []string{"lessons", "sim/sandbox", "sim/cluster", "sim/proxy", "sim/supervisor", "sim/feature"},
		Allow: []string{"lessons/lessonview"},
		Why:   "the screen draws small view types (trace events, world snapshots, lesson views); it never calls the apiserver"},
	{From: "lessons", Not: []string{"tui"},
		Why: "lessons run without a screen (rlab lesson verify, by hand in a terminal)"},
	{From: "", Except: []string{"cmd"}, Not: []string{"cmd"},
		Why: "commands are the top: nothing imports them"},
}

// Package is one package of the graph: its path and everything it depends
// on, directly or not.
type Package struct {
	ImportPath string
	Deps       []string
}

// Check returns one line for each package that breaks a rule, naming the
// dependency and the rule's reason.
func Check(pkgs []Package, rules []Rule) []string {
	var out []string
	for _, p := range pkgs {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		for _, r := range rules {
			if !under(rel, r.From) || slices.ContainsFunc(r.Except, func(e string) bool { return under(rel, e) }) {
				continue
			}
			var bad []string
			for _, d := range p.Deps {
				if name, ok := forbidden(d, r); ok {
					bad = append(bad, name)
				}
			}
			switch len(bad) {
			case 0:
			case 1:
				out = append(out, fmt.Sprintf("%s depends on %s: %s", rel, bad[0], r.Why))
			default:
				out = append(out, fmt.Sprintf("%s depends on %s and %d more: %s", rel, bad[0], len(bad)-1, r.Why))
			}
		}
	}
	return out
}

// forbidden says whether dependency d falls under one of r.Not and none of
// r.Allow; it returns d as the rules spell it.
func forbidden(d string, r Rule) (string, bool) {
	name := d
	if rel, ok := relative(d); ok {
		name = rel
	}
	for _, a := range r.Allow {
		if under(name, a) {
			return "", false
		}
	}
	for _, n := range r.Not {
		if under(name, n) {
			return name, true
		}
	}
	return "", false
}

// relative is p below Module, and whether it is there at all.
func relative(p string) (string, bool) {
	if p == Module {
		return "", true
	}
	rel, ok := strings.CutPrefix(p, Module+"/")
	return rel, ok
}

// under says whether path p is dir or below it ("" holds everything).
func under(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}
