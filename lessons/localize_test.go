package lessons

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/kkloud/rlab/operators/style"
)

func TestLocalize(t *testing.T) {
	const p = style.Prefix("rlab-s1-")
	tests := []struct{ in, want string }{
		{"kubectl -n echo-clientgo get ec", "kubectl -n rlab-s1-echo-clientgo get ec"},
		{"(echo-shell, echo-clientgo, echo-runtime)", "(rlab-s1-echo-shell, rlab-s1-echo-clientgo, rlab-s1-echo-runtime)"},
		{"`echo-shell`", "`rlab-s1-echo-shell`"},
		{"reconciling `echo-clientgo/hello`", "reconciling `rlab-s1-echo-clientgo/hello`"},
		{"--as=echo-clientgo-operator", "--as=echo-clientgo-operator"},
		// A ServiceAccount's user name: its namespace moves, its name does not.
		{"--as=system:serviceaccount:echo-clientgo:echo-clientgo-operator",
			"--as=system:serviceaccount:rlab-s1-echo-clientgo:echo-clientgo-operator"},
		{"my-echo-shell", "my-echo-shell"},
		{"echo-shell", "rlab-s1-echo-shell"},
		{"no namespace here", "no namespace here"},
		// A namespace a shell loop makes.
		{"for s in shell clientgo runtime; do kubectl -n echo-$s get ec; done",
			"for s in shell clientgo runtime; do kubectl -n rlab-s1-echo-$s get ec; done"},
		{`kubectl -n "echo-${s}" get ec`, `kubectl -n "rlab-s1-echo-${s}" get ec`},
		{"echo-$s", "rlab-s1-echo-$s"},
		{"echo-$s-operator", "echo-$s-operator"},
		{"echo-${s}-operator", "echo-${s}-operator"},
		{"echo-${s}.", "rlab-s1-echo-${s}."},
		{"my-echo-$s", "my-echo-$s"},
		{"echo-$", "echo-$"},
		{"echo-${s", "echo-${s"},
		{"echo-$1", "echo-$1"},
		// rlab do names styles, not namespaces: it is typed as written.
		{"rlab do slow go 300ms; kubectl -n echo-clientgo get ec", "rlab do slow go 300ms; kubectl -n rlab-s1-echo-clientgo get ec"},
		{"rlab do partition clientgo --mode refuse", "rlab do partition clientgo --mode refuse"},
		{`rlab do shell-replica add --suffix " (v2)"`, `rlab do shell-replica add --suffix " (v2)"`},
		{"rlab do finalizer all on && rlab do pause shell", "rlab do finalizer all on && rlab do pause shell"},
	}
	for _, tt := range tests {
		if got := Localize(tt.in, p); got != tt.want {
			t.Errorf("Localize(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := Localize(tt.in, ""); got != tt.in {
			t.Errorf("Localize(%q, no prefix) = %q, want it unchanged", tt.in, got)
		}
	}
}

// TestLocalizeServiceAccounts: wherever a lesson names an operator's
// ServiceAccount as a user (kubectl --as=system:serviceaccount:NS:NAME),
// the localized text names the student's namespace and the same name.
func TestLocalizeServiceAccounts(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	const p = style.Prefix("rlab-s1-")
	sa := regexp.MustCompile(`system:serviceaccount:(echo-[a-z]+):(echo-[a-z]+-operator)`)
	found := 0
	for _, l := range all {
		for i, s := range l.Steps {
			texts := []string{s.Text, s.Hint}
			if s.Action != nil {
				texts = append(texts, s.Action.Kubectl, s.Action.Note)
			}
			for _, text := range texts {
				for _, m := range sa.FindAllStringSubmatch(text, -1) {
					found++
					want := "system:serviceaccount:" + string(p) + m[1] + ":" + m[2]
					if got := Localize(text, p); !strings.Contains(got, want) {
						t.Errorf("%s step %d: %q localized to %q, want it to hold %q", l.Dir, i+1, m[0], got, want)
					}
				}
			}
		}
	}
	if found == 0 {
		t.Error("no lesson names an operator's ServiceAccount: lesson 10's kubectl auth can-i should")
	}
}

// The rlab do commands of the course read the same in a sandbox with a
// namespace prefix: localising leaves them alone.
func TestLocalizeDoCommands(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range all {
		for i, s := range l.Steps {
			if s.Action == nil {
				continue
			}
			want, err := DoCommands(s.Action.Kubectl)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DoCommands(Localize(s.Action.Kubectl, "rlab-s1-"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s step %d: localised rlab do commands %q, want %q", l.Dir, i+1, got, want)
			}
			n += len(want)
		}
	}
	t.Logf("%d rlab do commands in the course", n)
}
