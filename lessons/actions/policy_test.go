package actions

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/sandbox"
)

// TestPolicyAsTyped: the policy and binding lesson 16 has the student
// apply with kubectl (the lesson's version of the file they fill in) are
// the ones its apply_policy action applies.
func TestPolicyAsTyped(t *testing.T) {
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	l, err := lessons.Find(all, 16)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	var max int
	for _, s := range l.Steps {
		if s.Action == nil {
			continue
		}
		for _, op := range s.Action.Play {
			if op.Name == "apply_policy" {
				max, _ = op.Args.Int("max")
				doc = policyFile(t, s.Action)
			}
		}
	}
	docs := strings.Split(doc, "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("want the policy and its binding in a here-document, got %d documents:\n%s", len(docs), doc)
	}
	var gotPolicy admissionregistrationv1.ValidatingAdmissionPolicy
	var gotBinding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &gotPolicy); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &gotBinding); err != nil {
		t.Fatal(err)
	}
	var namespaces []string
	for _, st := range style.All() {
		namespaces = append(namespaces, st.Namespace())
	}
	policy, binding := sandbox.Policy(max, namespaces)
	gotPolicy.TypeMeta, gotBinding.TypeMeta = policy.TypeMeta, binding.TypeMeta
	if !equality.Semantic.DeepEqual(&gotPolicy, policy) {
		t.Errorf("the lesson's policy:\n%+v\napply_policy's:\n%+v", gotPolicy.Spec, policy.Spec)
	}
	if !equality.Semantic.DeepEqual(&gotBinding, binding) {
		t.Errorf("the lesson's binding:\n%+v\napply_policy's:\n%+v", gotBinding.Spec, binding.Spec)
	}
}

// policyFile is what the step's command applies: the here-document it
// types, or the file the student fills in from the note's skeleton, whose
// lines must be the lesson's version but for the blanks (...).
func policyFile(t *testing.T, a *lessons.Action) string {
	t.Helper()
	if a.Answer.Name == "" {
		_, doc, _ := strings.Cut(a.Kubectl, "<<'EOF'\n")
		doc, _, _ = strings.Cut(doc, "\nEOF")
		return doc
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(a.Answer.Data)), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	skeleton := strings.Split(strings.TrimSpace(a.Note), "\n")
	if len(skeleton) != len(lines) {
		t.Fatalf("the note's skeleton has %d lines, %s %d", len(skeleton), a.Answer.Name, len(lines))
	}
	blanks := 0
	for i, l := range skeleton {
		if l == lines[i] {
			continue
		}
		before, _, ok := strings.Cut(l, "...")
		if !ok || !strings.HasPrefix(lines[i], before) {
			t.Errorf("skeleton line %d %q is not %q with a blank", i+1, l, lines[i])
		}
		blanks++
	}
	if blanks != 2 {
		t.Errorf("the skeleton has %d blanks, want 2 (operations, expression)", blanks)
	}
	return strings.Join(lines, "\n")
}
