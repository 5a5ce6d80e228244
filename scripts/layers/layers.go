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
	{From: "lessons", Except: []string{"lessons/checks", "lessons/actions", "lessons/runner", "lessons/e2e"},
		Not: []string{"sim", "lessons/checks", "lessons/actions", "lessons/runner"}, Allow: []string{"sim/fault"},
		Why: "the course (lessons, their loader, handouts, translations) needs no engine: rlab lesson list, show and handout start none; sim/fault is the faults' words, which import nothing"},
	{From: "lessons/checks", Not: []string{"lessons/actions", "lessons/runner"},
		Why: "the checks only look: they evaluate the course's conditions over the world and the trace"},
	{From: "cmd/rlab/internal/control", Not: []string{"lessons", "sim", "tui", "operators"},
		Why: "rlab do's socket carries words: the running rlab's Doer reads them, so the protocol needs no course"},
	{From: "", Except: []string{"cmd"}, Not: []string{"cmd"},
		Why: "commands are the top: nothing imports them"},
}

// Layer is an allow-list: a package under From may depend, directly or
// through others, on rlab's packages under From and in May alone, so that
// a new arrow between layers is a change of this table, made on purpose.
// An entry of May names one package, or with "/..." a package and those
// below it.
// The Layer with the longest From holding a package is its layer.
type Layer struct {
	From string
	May  []string
	Why  string
}

// the operators' API, domain, bash script, styles and trace schema: what
// the engine and the features may link of the operators.
var operatorsBelow = []string{"operators/api/v1", "operators/echo", "operators/shell", "operators/style", "operators/trace"}

// Layers are ARCHITECTURE.md's arrows as allow-lists. cmd has none: it
// wires everything.
var Layers = []Layer{
	{From: "operators", Why: "the operators are what a student could have written: only each other"},
	{From: "operators/api/v1", Why: "the Echo type and its CRD stand alone"},
	{From: "operators/style", Why: "the vocabulary stands alone"},
	{From: "operators/shell", Why: "the bash loop is a script"},
	{From: "operators/trace", May: []string{"operators/style"}, Why: "the trace schema names styles, nothing more"},
	{From: "operators/echo", May: []string{"operators/api/v1", "operators/style", "operators/trace"},
		Why: "the domain the three operators share is built on the API and the trace schema"},
	{From: "sim", May: operatorsBelow, Why: "the engine links the operators' API, domain, script, styles and trace"},
	{From: "sim/proc", Why: "processes know no cluster"},
	{From: "sim/poll", Why: "waiting knows nothing else"},
	{From: "sim/marks", Why: "the marks rlab leaves for rlab bench (main screen drawn, lesson step shown) are the standard library's: any layer may mark"},
	{From: "sim/state", Why: "the state directory knows nothing else"},
	{From: "sim/rbac", Why: "an operator's declared RBAC is read from files"},
	{From: "sim/assets", May: []string{"sim/proc"}, Why: "the control plane's binaries are found, fetched or built"},
	{From: "sim/backend", May: []string{"sim/assets", "sim/proc"}, Why: "a backend's name and what it has"},
	{From: "sim/bus", May: []string{"operators/trace", "operators/style"}, Why: "the bus carries trace events"},
	{From: "sim/fault", Why: "the faults' words (kinds, parse, describe) know nothing else"},
	{From: "sim/proxy", May: []string{"operators/trace", "operators/style", "sim/fault"}, Why: "a proxy publishes trace events of what it forwards, and injects the faults sim/fault names"},
	{From: "sim/world", May: []string{"operators/api/v1", "operators/echo", "operators/style", "operators/trace"},
		Why: "the observer reads the cluster in the operators' domain"},
	{From: "tui", May: []string{"lessons/lessonview", "operators/api/v1", "operators/echo", "operators/style", "operators/trace", "sim/bus", "sim/marks", "sim/world"},
		Why: "the screen draws view types: trace events, world snapshots, lesson views; it marks its first main frame for rlab bench (sim/marks)"},
	{From: "lessons", May: []string{"lessons/lessonview", "operators/api/v1", "operators/echo", "operators/style", "operators/trace", "sim/fault"},
		Why: "the course is data and words: the loader checks arguments in the operators' domain and faults in sim/fault's"},
	{From: "lessons/checks", May: append([]string{"lessons", "lessons/lessonview", "sim/..."}, operatorsBelow...),
		Why: "the checks evaluate the course's conditions over the engine's world and trace"},
	{From: "lessons/actions", May: append([]string{"lessons", "lessons/lessonview", "lessons/checks", "sim/..."}, operatorsBelow...),
		Why: "the actions drive the engine and its features; the Player awaits the checks"},
	{From: "lessons/runner", May: append([]string{"lessons", "lessons/lessonview", "lessons/checks", "lessons/actions", "sim/..."}, operatorsBelow...),
		Why: "the runners play the course's lessons with the actions and the checks"},
	{From: "lessons/e2e", May: append([]string{"lessons", "lessons/lessonview", "lessons/checks", "lessons/actions", "lessons/runner", "sim/..."}, operatorsBelow...),
		Why: "the course's end-to-end tests run it all"},
	{From: "lessons/lessonview", Why: "the screen's lesson views need only the standard library"},
	{From: "scripts", Why: "the scripts' packages stand alone"},
}

// CheckLayers returns one line for each package that depends on one of
// rlab's packages its layer does not allow, naming it and the layer's reason.
func CheckLayers(pkgs []Package, layers []Layer) []string {
	var out []string
	for _, p := range pkgs {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		l, ok := layerOf(rel, layers)
		if !ok {
			continue
		}
		var bad []string
		for _, d := range p.Deps {
			dr, ok := relative(d)
			if !ok || under(dr, l.From) || slices.ContainsFunc(l.May, func(m string) bool { return names(m, dr) }) {
				continue
			}
			bad = append(bad, dr)
		}
		if len(bad) > 0 {
			out = append(out, fmt.Sprintf("%s (layer %s) depends on %s, which the layer does not allow: %s; allowed: %s itself and %s",
				rel, l.From, strings.Join(bad, ", "), l.Why, l.From, allowed(l.May)))
		}
	}
	return out
}

// names says whether May's entry m names package p.
func names(m, p string) bool {
	if tree, ok := strings.CutSuffix(m, "/..."); ok {
		return under(p, tree)
	}
	return p == m
}

// layerOf is the layer with the longest From holding package rel.
func layerOf(rel string, layers []Layer) (Layer, bool) {
	best, found := Layer{}, false
	for _, l := range layers {
		if under(rel, l.From) && (!found || len(l.From) > len(best.From)) {
			best, found = l, true
		}
	}
	return best, found
}

func allowed(may []string) string {
	if len(may) == 0 {
		return "nothing else of rlab"
	}
	return strings.Join(may, ", ")
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
