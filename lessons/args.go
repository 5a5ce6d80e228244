package lessons

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/fault"
)

// argType is the type of one argument of an action or a check.
type argType int

const (
	tString   argType = iota
	tName             // a DNS label: an Echo name
	tInt              // a small non-negative integer
	tDuration         // 30s, 250ms
	tBool
	tStyle         // one style; go (the Go styles); all
	tGoStyle       // one style with a Lease and watches, or go
	tStrings       // a list of words
	tTests         // a list of Go test names: TestReconcileMakesDeployment
	tErrKind       // an apiserver error reason: invalid, conflict, forbidden, internal
	tMode          // a partition: refuse or hang
	tOperator      // the name of the student's operator the lesson runs
	tChecks        // a list of rlab check's check IDs
	tFile          // a bash script in the lesson's folder: owner.sh
	tProject       // a folder of a Go project in the lesson's folder, its name beginning with _: _steps/owner
	tWhere         // where GenerationChangedPredicate filters: off, echo or all
	tResource      // what an informer watches: Echo, Deployment or ConfigMap
	tChange        // what an update changed: spec (the generation moved) or status
	tQPS           // requests per second: above 0, or -1 for no limit
	tDefaultsCache // what controller-runtime caches of ConfigMaps: all or named
	tEvent         // an informer event: add, update or delete
	tMessage       // an Echo's spec.message: any text, "" too (the namespace's default); the CRD's rule refuses spaces only
	tFault         // a fault as fault.Parse reads it (stale:2s, conflict,p=0.5), or off, or off:KIND
	tFaultKind     // the kind of a fault: stale, conflict, crash …
)

// spec is what arguments an action or a check takes.
type spec struct {
	required argTypes
	optional argTypes
	// orOperator: a style argument of one style or a group (tStyle) may
	// name the student's operator instead, operator: mine (every check;
	// the actions on a Deployment by hand).
	orOperator bool
}

// about is sp as a lesson wrote n: with operator: NAME in place of style
// when sp allows it and n gives it.
func (sp spec) about(n *yaml.Node) spec {
	if !sp.orOperator || sp.required["style"] != tStyle || n.Kind != yaml.MappingNode {
		return sp
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "operator" {
			req := argTypes{"operator": tOperator}
			for k, t := range sp.required {
				if k != "style" {
					req[k] = t
				}
			}
			return spec{required: req, optional: sp.optional}
		}
	}
	return sp
}

// argTypes are arguments by name.
type argTypes map[string]argType

// expectArg is accepted by every action: the apiserver must refuse it so.
var expectArg = argTypes{"expect_error": tErrKind}

// Args are validated arguments.
type Args map[string]any

// Str is a string argument, "" if absent.
func (a Args) Str(k string) string { s, _ := a[k].(string); return s }

// Int is an integer argument and whether it was given.
func (a Args) Int(k string) (int, bool) { n, ok := a[k].(int); return n, ok }

// QPS is a requests-per-second argument, 0 if absent.
func (a Args) QPS(k string) float32 { q, _ := a[k].(float32); return q }

// Dur is a duration argument, 0 if absent.
func (a Args) Dur(k string) time.Duration { d, _ := a[k].(time.Duration); return d }

// Bool is a boolean argument, false if absent.
func (a Args) Bool(k string) bool { b, _ := a[k].(bool); return b }

// List is a list argument.
func (a Args) List(k string) []string { l, _ := a[k].([]string); return l }

// File is a file argument: its name, and its content once the loader has
// read it from the lesson's folder.
func (a Args) File(k string) File { f, _ := a[k].(File); return f }

// Styles are the styles an action or a check is about: the student's
// operator it names, or those its style argument means.
func (a Args) Styles() []style.Style {
	if op := a.Str("operator"); op != "" {
		return []style.Style{style.Style(op)}
	}
	return ExpandStyle(a.Str("style"))
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)
	wordRE = regexp.MustCompile(`^[a-z][a-z0-9./_-]*$`)
	fileRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*\.sh$`)
	// projectRE: a folder go build ./... skips (its name begins with _).
	projectRE = regexp.MustCompile(`^_[a-z0-9_-]+(/[a-z0-9][a-z0-9_-]*)*$`)
)

// Style arguments that name a group of styles.
const (
	StyleAll = "all"
	StyleGo  = "go" // the styles with a Lease and watches
)

// ExpandStyle is the styles a style argument means.
func ExpandStyle(arg string) []style.Style {
	switch arg {
	case StyleAll:
		return style.All()
	case StyleGo:
		return goStyles()
	}
	return []style.Style{style.Style(arg)}
}

// goStyles are the styles that elect a leader and watch.
func goStyles() []style.Style {
	return slices.DeleteFunc(style.All(), func(s style.Style) bool { return !s.Traits().ElectsLeader })
}

// StyleNames lists styles for an error message: "clientgo, runtime".
func StyleNames(ss []style.Style) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

// args validates the arguments mapping of one action or check.
func (p *parser) args(n *yaml.Node, what string, sp spec, isOp bool) Args {
	sp = sp.about(n)
	opt := argTypes{}
	for k, t := range sp.optional {
		opt[k] = t
	}
	if isOp {
		for k, t := range expectArg {
			opt[k] = t
		}
	}
	req := sortedKeys(sp.required)
	f := p.fields(n, what, req, sortedKeys(opt))
	if f == nil {
		return nil
	}
	out := Args{}
	before := len(p.errs)
	for k, v := range f {
		t, ok := sp.required[k]
		if !ok {
			t = opt[k]
		}
		if val, ok := p.value(v, what+": "+k, t); ok {
			out[k] = val
		}
	}
	if mn, ok := out.Int("min"); ok {
		if mx, ok := out.Int("max"); ok && mx < mn {
			p.errorf(n, "%s: max (%d) is less than min (%d)", what, mx, mn)
		}
	}
	if mn, mx := out.Dur("min"), out.Dur("max"); mn > 0 && mx > 0 && mx < mn {
		p.errorf(n, "%s: max (%s) is less than min (%s)", what, mx, mn)
	}
	if l := out.Str("latency"); l != "" {
		if d, err := time.ParseDuration(l); err != nil || d < 0 || d > 5*time.Second {
			p.errorf(f["latency"], "%s: latency: want 0s to 5s, got %q", what, l)
		}
	}
	if _, ok := sp.optional["qps"]; ok && len(p.errs) == before {
		// A burst goes with a rate: the rule the operators hold their flags to.
		burst, _ := out.Int("burst")
		if err := echo.CheckClientLimit(out.QPS("qps"), burst); err != nil {
			p.errorf(n, "%s: %v", what, err)
		}
	}
	if c := out.Str("cascade"); c != "" && c != "background" && c != "orphan" {
		p.errorf(f["cascade"], "%s: cascade: want background or orphan, got %q", what, c)
	}
	if len(p.errs) > before {
		return nil
	}
	return out
}

// testNameRE is a Go test function's name, which go test -run takes whole.
var testNameRE = regexp.MustCompile(`^Test[A-Z0-9_][A-Za-z0-9_]*$`)

// value reads one scalar (or list) of type t.
func (p *parser) value(n *yaml.Node, what string, t argType) (any, bool) {
	if t == tChecks {
		return p.checkIDs(n, what)
	}
	if t == tStrings || t == tTests {
		re, one := wordRE, "a word"
		if t == tTests {
			re, one = testNameRE, "a Go test's name (TestSomething)"
		}
		if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
			p.errorf(n, "%s: want a list of %ss, got %s", what, strings.TrimPrefix(one, "a "), kindName(n))
			return nil, false
		}
		var out []string
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode || !re.MatchString(c.Value) {
				p.errorf(c, "%s: want %s, got %s", what, one, kindName(c))
				return nil, false
			}
			out = append(out, c.Value)
		}
		return out, true
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, "%s: want a value, got %s", what, kindName(n))
		return nil, false
	}
	v := n.Value
	bad := func(want string) (any, bool) {
		p.errorf(n, "%s: want %s, got %q", what, want, v)
		return nil, false
	}
	switch t {
	case tMessage:
		return v, true
	case tString:
		if strings.TrimSpace(v) == "" {
			return bad("text")
		}
		return v, true
	case tName:
		if !nameRE.MatchString(v) {
			return bad("an Echo name (lower-case letters, digits and -, at most 40)")
		}
		return v, true
	case tInt:
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i > 1000 || n.Tag != "!!int" {
			return bad("a whole number from 0 to 1000")
		}
		return i, true
	case tDuration:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxDuration {
			return bad(fmt.Sprintf("a duration between 1ms and %s like 3s", maxDuration))
		}
		return d, true
	case tBool:
		if n.Tag != "!!bool" {
			return bad("true or false")
		}
		return v == "true", true
	case tStyle:
		if v != StyleAll && v != StyleGo && !slices.Contains(style.All(), style.Style(v)) {
			return bad("a style: " + StyleNames(style.All()) + ", go or all")
		}
		return v, true
	case tGoStyle:
		if v != StyleGo && !slices.Contains(goStyles(), style.Style(v)) {
			return bad("a Go style, with a Lease and watches: " + StyleNames(goStyles()) + " or go")
		}
		return v, true
	case tErrKind:
		if v != "invalid" && v != "conflict" && v != "forbidden" && v != "internal" {
			return bad("invalid, conflict, forbidden or internal")
		}
		return v, true
	case tMode:
		if v != "refuse" && v != "hang" {
			return bad("refuse or hang")
		}
		return v, true
	case tWhere:
		if !slices.Contains(echo.GenerationPredicates, v) {
			return bad(strings.Join(echo.GenerationPredicates, ", ") + " (where GenerationChangedPredicate filters)")
		}
		return v, true
	case tResource:
		if v != echov1.Kind && v != "Deployment" && v != "ConfigMap" {
			return bad("Echo, Deployment or ConfigMap")
		}
		return v, true
	case tEvent:
		if v != "add" && v != "update" && v != "delete" {
			return bad("add, update or delete")
		}
		return v, true
	case tDefaultsCache:
		if !slices.Contains(echo.DefaultsCaches, v) {
			return bad(strings.Join(echo.DefaultsCaches, ", ") + " (what controller-runtime caches of ConfigMaps)")
		}
		return v, true
	case tFault:
		if _, _, err := fault.ParseArg(v); err != nil {
			p.errorf(n, "%s: %v", what, err)
			return nil, false
		}
		return v, true
	case tFaultKind:
		if !slices.Contains(fault.Kinds, fault.Kind(v)) {
			return bad("a fault: " + strings.Join(faultKindNames(), ", "))
		}
		return v, true
	case tQPS:
		q, err := strconv.ParseFloat(v, 32)
		if err != nil || n.Tag != "!!int" && n.Tag != "!!float" || q != echo.NoClientLimit && (q <= 0 || math.IsInf(q, 0)) {
			return bad("requests per second above 0, e.g. 50, or -1 for no client-side limit")
		}
		return float32(q), true
	case tChange:
		if v != "spec" && v != "status" {
			return bad("spec (the generation moved) or status (it did not)")
		}
		return v, true
	case tOperator:
		if _, err := style.Custom(v); err != nil {
			return bad("the name of the lesson's operator, e.g. mine")
		}
		return v, true
	case tFile:
		if !fileRE.MatchString(v) {
			return bad("a bash script in the lesson's folder, e.g. owner.sh")
		}
		return File{Name: v}, true
	case tProject:
		if !projectRE.MatchString(v) {
			return bad("a folder of a Go project in the lesson's folder, its name beginning with _, e.g. _steps/owner")
		}
		return File{Name: v}, true
	}
	return bad("a known type")
}

// checkIDs reads a list of rlab check's checks, each once.
func (p *parser) checkIDs(n *yaml.Node, what string) (any, bool) {
	var known []string
	for _, c := range RlabChecks {
		known = append(known, c.ID)
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.errorf(n, "%s: want a list of rlab check's checks (%s), got %s", what, strings.Join(known, ", "), kindName(n))
		return nil, false
	}
	var out []string
	for _, c := range n.Content {
		switch {
		case c.Kind != yaml.ScalarNode || !slices.Contains(known, c.Value):
			p.errorf(c, "%s: %s is not one of rlab check's checks (%s)", what, kindName(c), strings.Join(known, ", "))
			return nil, false
		case slices.Contains(out, c.Value):
			p.errorf(c, "%s: %s given twice", what, c.Value)
			return nil, false
		}
		out = append(out, c.Value)
	}
	return out, true
}

// isProjectName says whether a File's name is a project's folder, not a
// script's file.
func isProjectName(name string) bool { return projectRE.MatchString(name) }

// faultKindNames are the faults' names, for an error.
func faultKindNames() []string {
	out := make([]string, len(fault.Kinds))
	for i, k := range fault.Kinds {
		out[i] = string(k)
	}
	return out
}
