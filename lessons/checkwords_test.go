package lessons

import (
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
)

// checkFormats are the English formats the checks' words are printed
// with: every string literal passed to a say's f in checkspecs.go. A call with any other format is an error: its words could not
// be translated.
func checkFormats(t *testing.T) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	for _, file := range []string{"checkspecs.go"} {
		f, err := goparser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "f" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "s" {
				return true
			}
			var lit *ast.BasicLit
			if len(call.Args) > 0 {
				lit, _ = call.Args[0].(*ast.BasicLit)
			}
			if lit == nil || lit.Kind != token.STRING {
				t.Errorf("%s: s.f's format is not a string literal", fset.Position(call.Pos()))
				return true
			}
			format, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(out, format) {
				out = append(out, format)
			}
			return true
		})
	}
	if len(out) < 40 {
		t.Fatalf("%d formats found in checkspecs.go: is the printer still s.f?", len(out))
	}
	return out
}

// verbRE is a fmt verb, its argument index ([2]) apart.
var verbRE = regexp.MustCompile(`%[-+# 0]*(?:\[\d+\])?[\d.*]*([a-zA-Z%])`)

// checkVerbs are the fmt verbs of format in order, %[2]s as %s, %% left out.
func checkVerbs(format string) string {
	var out []string
	for _, m := range verbRE.FindAllStringSubmatch(format, -1) {
		if m[1] != "%" {
			out = append(out, "%"+m[1])
		}
	}
	return strings.Join(out, " ")
}

// Every format of the checks' words is translated in every language, with
// the same verbs, and no language translates a format the checks no
// longer print.
func TestCheckWordsTranslated(t *testing.T) {
	formats := checkFormats(t)
	for _, lang := range Languages[1:] {
		c, err := loadCourse(embedded, lang)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range formats {
			tr, ok := c.Checks[f]
			switch {
			case !ok || strings.TrimSpace(tr) == "":
				t.Errorf("i18n/%s.yaml: checks: no %q", lang, f)
			case checkVerbs(tr) != checkVerbs(f):
				t.Errorf("i18n/%s.yaml: checks: %q: verbs %q, want %q", lang, f, checkVerbs(tr), checkVerbs(f))
			}
		}
		for f := range c.Checks {
			if !slices.Contains(formats, f) {
				t.Errorf("i18n/%s.yaml: checks: %q: no check says it", lang, f)
			}
		}
	}
}

// Every line a step's check waits for reads in the language: none is the
// English one, but for a line of names and numbers only. checkVariants,
// which have every kind of check, count as a step.
func TestCheckWordsInEveryLanguage(t *testing.T) {
	ls, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for kind := range checks {
		if !slices.ContainsFunc(checkVariants, func(c Cond) bool { return c.Kind == kind }) {
			t.Errorf("checkVariants: no %s", kind)
		}
	}
	all := []*Check{{Hold: 6 * time.Second, Conds: checkVariants}}
	for _, l := range ls {
		for _, s := range l.Steps {
			if s.Check != nil {
				all = append(all, s.Check)
			}
		}
	}
	for _, lang := range Languages[1:] {
		co, err := loadCourse(embedded, lang)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range all {
			en := strings.Split(c.Describe(), "\n")
			tr := strings.Split(c.DescribeIn(co), "\n")
			if len(tr) != len(en) {
				t.Errorf("%s: %d lines, English has %d:\n%s", lang, len(tr), len(en), strings.Join(tr, "\n"))
				continue
			}
			for i := range en {
				if tr[i] == en[i] && !namesOnly(en[i], c) {
					t.Errorf("%s: %q is English", lang, tr[i])
				}
			}
			// A line's words apart from whom they are about, which is
			// translated too.
			for _, cond := range c.Conds {
				w := checks[cond.Kind].words
				if en := w(say{}, cond.Args); w(say{co}, cond.Args) == en && !namesOnly(en, c) {
					t.Errorf("%s: %s: %q is English", lang, cond.Kind, en)
				}
			}
		}
	}
}

// namesOnly says whether line is made only of the check's argument values
// and numbers: nothing there to translate.
func namesOnly(line string, c *Check) bool {
	var values []string
	for _, cond := range c.Conds {
		for _, v := range cond.Args {
			values = append(values, strings.Fields(fmt.Sprint(v))...)
		}
	}
	for _, w := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" :,()", r) }) {
		if _, err := strconv.ParseFloat(w, 64); err != nil && !slices.Contains(values, w) {
			return false
		}
	}
	return true
}

// goldenFile names the golden file testdata/NAME.golden for golden's
// RequireEqual, which otherwise names it after the test.
type goldenFile struct {
	testing.TB
	name string
}

func (g goldenFile) Name() string { return g.name }

// The English words of every check of the course stay as they were:
// translating them must not change them (go test -run TestCheckWordsEnglish
// -update rewrites testdata/check-words.golden).
func TestCheckWordsEnglish(t *testing.T) {
	ls, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range ls {
		for i, s := range l.Steps {
			if s.Check == nil {
				continue
			}
			fmt.Fprintf(&b, "%s step %d:\n%s\n\n", l.Dir, i+1, s.Check.Describe())
		}
	}
	b.WriteString("every variant of every check:\n")
	for _, c := range checkVariants {
		b.WriteString(c.Describe() + "\n")
	}
	b.WriteString((&Check{Hold: 6 * time.Second, Conds: checkVariants[:1]}).Describe() + "\n")
	golden.RequireEqual(goldenFile{t, "check-words"}, b.String())
}

// checkVariants take every branch of the checks' words and of who.
var checkVariants = []Cond{
	{Kind: "operator_check", Args: Args{"operator": "mine", "checks": []string{"converge", "gc"}}},
	{Kind: "project_test", Args: Args{"operator": "mine", "tests": []string{"TestA", "TestB"}}},
	{Kind: "manifests", Args: Args{"operator": "mine"}},
	{Kind: "shipped", Args: Args{"operator": "mine"}},
	{Kind: "unshipped", Args: Args{"operator": "mine"}},
	{Kind: "project_test", Args: Args{"operator": "mine", "tests": []string{"TestA"}, "needs_gc": true, "fails_with": File{Name: "_broken/x"}}},
	{Kind: "echo_status", Args: Args{"style": "all", "name": "hello", "ready": "2/2"}},
	{Kind: "status_current", Args: Args{"style": "go", "name": "hello", "current": true}},
	{Kind: "status_current", Args: Args{"style": "shell", "name": "hello", "current": false}},
	{Kind: "echo_condition", Args: Args{"style": "clientgo", "name": "hello", "type": "Ready", "status": "True"}},
	{Kind: "status_behind", Args: Args{"style": "runtime", "name": "hello"}},
	{Kind: "replicas_owner", Args: Args{"style": "all", "name": "hello", "manager": "kubectl"}},
	{Kind: "handovers", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "handovers", Args: Args{"style": "all", "name": "hello", "min": 2}},
	{Kind: "handovers", Args: Args{"style": "all", "name": "hello", "max": 0}},
	{Kind: "handovers", Args: Args{"style": "all", "name": "hello", "min": 1, "max": 3}},
	{Kind: "echo_absent", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "echoes_ready", Args: Args{"style": "all", "prefix": "load", "count": 1}},
	{Kind: "echoes_ready", Args: Args{"style": "all", "prefix": "load", "count": 50}},
	{Kind: "echoes_converged", Args: Args{"style": "all", "prefix": "load", "count": 50}},
	{Kind: "echoes_converged", Args: Args{"style": "all", "prefix": "load", "count": 50, "min": 2 * time.Second, "max": 9 * time.Second}},
	{Kind: "echoes_converged", Args: Args{"style": "all", "prefix": "load", "count": 50, "min": 2 * time.Second}},
	{Kind: "echoes_converged", Args: Args{"style": "all", "prefix": "load", "count": 50, "max": 9 * time.Second, "faster_than": "slow"}},
	{Kind: "echoes_converged", Args: Args{"style": "all", "prefix": "load", "count": 50, "faster_than": "slow"}},
	{Kind: "echoes_absent", Args: Args{"style": "all", "prefix": "load"}},
	{Kind: "deployment_replicas", Args: Args{"style": "all", "name": "hello", "replicas": 3}},
	{Kind: "deployment_replicas", Args: Args{"style": "all", "name": "hello", "replicas": 1, "ready": true}},
	{Kind: "deployment_absent", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "owned", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "orphaned", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "converged", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "noticed", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "drift_repaired", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "drift_repaired", Args: Args{"style": "all", "name": "hello", "what": "message"}},
	{Kind: "gc_collected", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "new_leader", Args: Args{"style": "go"}},
	{Kind: "new_leader", Args: Args{"style": "go", "min": 10 * time.Second}},
	{Kind: "new_leader", Args: Args{"style": "go", "max": 20 * time.Second}},
	{Kind: "new_leader", Args: Args{"style": "go", "min": 10 * time.Second, "max": 20 * time.Second}},
	{Kind: "leader_lost", Args: Args{"style": "go"}},
	{Kind: "campaigning", Args: Args{"style": "go"}},
	{Kind: "client_limit", Args: Args{"style": "go", "qps": float32(-1)}},
	{Kind: "client_limit", Args: Args{"style": "go", "qps": float32(5)}},
	{Kind: "client_limit", Args: Args{"style": "go", "qps": float32(5), "burst": 10}},
	{Kind: "replicas_running", Args: Args{"style": "all"}},
	{Kind: "connected", Args: Args{"style": "all"}},
	{Kind: "replicas_paused", Args: Args{"style": "all"}},
	{Kind: "restarted", Args: Args{"style": "all"}},
	{Kind: "you_asked", Args: Args{}},
	{Kind: "you_asked", Args: Args{"min": 1}},
	{Kind: "you_asked", Args: Args{"verbs": []string{"get", "list"}}},
	{Kind: "you_asked", Args: Args{"resource": "echoes"}},
	{Kind: "you_asked", Args: Args{"code": 403}},
	{Kind: "you_asked", Args: Args{"verbs": []string{"create"}, "resource": "echoes", "code": 409, "min": 2}},
	{Kind: "you_asked", Args: Args{"min": 3}},
	{Kind: "standby_watches", Args: Args{"style": "go"}},
	{Kind: "standby_watches", Args: Args{"style": "go", "max": 0, "over": 5 * time.Second}},
	{Kind: "standby_watches", Args: Args{"style": "go", "min": 1}},
	{Kind: "api_requests", Args: Args{"style": "all"}},
	{Kind: "api_requests", Args: Args{"style": "all", "verbs": []string{"get", "list"}}},
	{Kind: "api_requests", Args: Args{"style": "all", "resource": "echoes"}},
	{Kind: "api_requests", Args: Args{"style": "all", "verbs": []string{"watch"}, "resource": "echoes"}},
	{Kind: "api_requests", Args: Args{"style": "all", "code": 429, "min": 1}},
	{Kind: "api_requests", Args: Args{"style": "all", "verbs": []string{"update"}, "resource": "echoes", "code": 409, "min": 1, "max": 9, "over": 10 * time.Second}},
	{Kind: "api_requests", Args: Args{"style": "all", "over": 10 * time.Second}},
	{Kind: "api_requests", Args: Args{"style": "all", "resource": "leases", "over": 10 * time.Second, "max": 4}},
	{Kind: "faults_injected", Args: Args{"style": "all", "fault": "error"}},
	{Kind: "faults_injected", Args: Args{"style": "all", "fault": "error", "min": 1}},
	{Kind: "informer_updates", Args: Args{"style": "go", "resource": "Echo", "name": "hello"}},
	{Kind: "informer_updates", Args: Args{"style": "go", "resource": "Echo", "name": "hello", "change": "status", "filtered": true, "min": 1}},
	{Kind: "informer_updates", Args: Args{"style": "go", "resource": "Deployment", "name": "hello", "change": "spec", "max": 0}},
	{Kind: "informer_updates", Args: Args{"style": "go", "resource": "ConfigMap", "name": "echo-defaults", "event": "add", "min": 1}},
	{Kind: "informer_updates", Args: Args{"style": "go", "resource": "Echo", "name": "hello", "event": "delete", "filtered": true}},
	{Kind: "informer_updates", Args: Args{"style": "go", "resource": "Echo", "name": "hello", "event": "update", "change": "spec"}},
	{Kind: "reconciles_after_edit", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "reconciles_after_edit", Args: Args{"style": "all", "name": "hello", "min": 1, "max": 2}},
	{Kind: "reconciles_after_edit", Args: Args{"style": "all", "name": "hello", "cause": "ConfigMap/echo-defaults", "min": 1}},
	{Kind: "reconciles_after_edit", Args: Args{"style": "all", "name": "hello", "cause": "ConfigMap/echo-defaults"}},
	{Kind: "coalesced", Args: Args{"style": "go", "name": "hello"}},
	{Kind: "retries", Args: Args{"style": "go", "name": "hello", "min": 3}},
	{Kind: "retries", Args: Args{"style": "go", "name": "hello", "min": 1}},
	{Kind: "flapping", Args: Args{"style": "all", "name": "hello", "min": 3}},
	{Kind: "flapping", Args: Args{"style": "all", "name": "hello", "min": 1}},
	{Kind: "deployment_message", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "deployment_message", Args: Args{"style": "all", "name": "hello", "message": "hi"}},
	{Kind: "has_finalizer", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "registered", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "unregistered", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "echo_deleting", Args: Args{"style": "all", "name": "hello"}},
	{Kind: "finalized", Args: Args{"style": "all", "name": "hello"}},
}
