package lessons

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// sample is a valid value of an argument, as a lesson would write it.
func sample(name string, t argType) string {
	switch name { // strings the loader checks further
	case "latency":
		return "1s"
	case "cascade":
		return "orphan"
	}
	return map[argType]string{
		tString: "x", tName: "hello", tInt: "1", tDuration: "1s", tBool: "true",
		tStyle: StyleAll, tGoStyle: StyleGo, tStrings: "[get]", tErrKind: "conflict", tMode: "refuse", tWhere: "echo", tResource: "Echo", tChange: "status", tQPS: "50",
		tOperator: "mine", tChecks: "[owner, gc]", tTests: "[TestX]", tFile: "owner.sh", tProject: "_steps/owner", tDefaultsCache: "named", tEvent: "add", tMessage: "x", tFault: "stale:2s", tFaultKind: "conflict",
	}[t]
}

// withOperator is a lesson of steps that runs the student's operator mine;
// the operator comes after the steps, so that their lines stay as lesson()
// puts them.
func withOperator(steps string) string {
	return lesson(steps) + "operator: {name: mine, starter: starter.sh}\n"
}

// about is the argument that says whom an entry is about: its style, or
// the student's operator.
func about(sp spec) (string, argType, bool) {
	for _, k := range []string{"style", "operator"} {
		if t, ok := sp.required[k]; ok {
			return k, t, true
		}
	}
	return "", 0, false
}

// flow is sp's required arguments (and extra, "k: v"), as a YAML flow mapping.
func flow(sp spec, extra ...string) string {
	var kv []string
	for _, k := range sortedKeys(sp.required) {
		kv = append(kv, k+": "+sample(k, sp.required[k]))
	}
	return "{" + strings.Join(append(kv, extra...), ", ") + "}"
}

// checkStep is a step checking only name (its line is 7 in lesson()).
func checkStep(name string, sp spec, extra ...string) string {
	return fmt.Sprintf("  - title: a\n    text: b\n    check:\n      %s: %s\n    hint: h\n", name, flow(sp, extra...))
}

// actionStep is a step playing only name (its line is 9 in lesson()).
func actionStep(name string, sp spec, extra ...string) string {
	return fmt.Sprintf("  - title: a\n    text: b\n    action:\n      note: n\n      play:\n        - %s: %s\n", name, flow(sp, extra...))
}

// Every entry of the registries is whole: a check has its style (or
// operator) argument (you_asked, about the student, has none) and words;
// an action has words. (lessons/checks and lessons/actions hold their
// evaluations and deeds to the same names.)
func TestRegistry(t *testing.T) {
	for name, c := range checks {
		if _, _, ok := about(c.args); !ok && name != "you_asked" || c.words == nil {
			t.Errorf("check %s: want a style or operator argument, and words", name)
		}
		for k := range c.args.optional {
			if _, dup := c.args.required[k]; dup {
				t.Errorf("check %s: %s is both required and optional", name, k)
			}
		}
	}
	for name, a := range actions {
		if a.words == nil {
			t.Errorf("action %s: want words", name)
		}
		if _, ok := a.args.required["expect_error"]; ok {
			t.Errorf("action %s: expect_error is every action's already", name)
		}
	}
}

// Each check and action, given its required arguments, loads, evaluates on
// an empty world and says what it does; the loader names the line of an
// unknown argument and of a missing one.
func TestRegistryLoads(t *testing.T) {
	type entry struct {
		name, what string
		sp         spec
		step       func(name string, sp spec, extra ...string) string
		line       int
	}
	var entries []entry
	for _, name := range sortedKeys(checks) {
		entries = append(entries, entry{name, "check", checks[name].args, checkStep, 7})
	}
	for _, name := range sortedKeys(actions) {
		entries = append(entries, entry{name, "action", actions[name].args, actionStep, 9})
	}
	for _, e := range entries {
		t.Run(e.what+" "+e.name, func(t *testing.T) {
			k, kt, _ := about(e.sp)
			wrap := lesson
			if k == "operator" {
				wrap = withOperator
			}
			l, err := Parse("l.yaml", []byte(wrap(e.step(e.name, e.sp))))
			if err != nil {
				t.Fatal(err)
			}
			var words string
			if s := l.Steps[0]; s.Check != nil {
				c := s.Check.Conds[0]
				if c.Kind != e.name || c.Line != e.line {
					t.Errorf("cond = %+v, want %s at line %d", c, e.name, e.line)
				}
				words = s.Check.Describe()
			} else {
				op := s.Action.Play[0]
				if op.Name != e.name || op.Line != e.line {
					t.Errorf("op = %+v, want %s at line %d", op, e.name, e.line)
				}
				words = op.Describe()
			}
			if k != "" && !strings.HasPrefix(words, who(Args{k: sample(k, kt)})+": ") || len(words) < 15 {
				t.Errorf("words %q: want a sentence, after the styles it is about", words)
			}

			_, err = Parse("l.yaml", []byte(wrap(e.step(e.name, e.sp, "bogus: 1"))))
			if want := fmt.Sprintf(`l.yaml:%d: `, e.line); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `unknown field "bogus"`) {
				t.Errorf("unknown argument: error %v, want %q and the field", err, want)
			}
			for k := range e.sp.required {
				sp := spec{required: argTypes{}}
				for k2, t2 := range e.sp.required {
					if k2 != k {
						sp.required[k2] = t2
					}
				}
				_, err := Parse("l.yaml", []byte(wrap(e.step(e.name, sp))))
				if want := fmt.Sprintf(`l.yaml:%d: `, e.line); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("%q is required", k)) {
					t.Errorf("without %s: error %v, want %q and the argument", k, err, want)
				}
			}
		})
	}
}

// The course's README lists every check and action a lesson may use.
func TestRegistryDocumented(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(sortedKeys(checks), sortedKeys(actions)...) {
		if !strings.Contains(string(b), "`"+name+"`") {
			t.Errorf("README.md does not list `%s`", name)
		}
	}
}

func TestOpDescribe(t *testing.T) {
	tests := []struct {
		op   Op
		want string
	}{
		{Op{Name: "set_replicas", Args: Args{"name": "hello", "replicas": 4}}, "set the replicas of Echo hello to 4"},
		{Op{Name: "scale_deployment", Args: Args{"style": "go", "name": "hello", "replicas": 1}}, "both Go styles: scale Deployment echo-hello to 1 replicas"},
		{Op{Name: "kill_leader", Args: Args{"style": "runtime"}}, "runtime: kill the leader (SIGKILL)"},
		{Op{Name: "tune", Args: Args{"style": "go", "workers": 10, "qps": float32(100), "burst": 200}},
			"both Go styles: restart the replicas with --workers=10 --qps=100 --burst=200"},
		{Op{Name: "tune", Args: Args{"style": "clientgo"}}, "clientgo: restart the replicas with the library's defaults"},
		{Op{Name: "set_message", Args: Args{"name": "hello", "message": "", "expect_error": "invalid"}},
			`set the message of Echo hello to "", which the apiserver must refuse (invalid)`},
	}
	for _, tt := range tests {
		if got := tt.op.Describe(); got != tt.want {
			t.Errorf("%s: Describe = %q, want %q", tt.op.Name, got, tt.want)
		}
	}
}
