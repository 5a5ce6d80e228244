package lessonview

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestStandardLibraryOnly: the screen imports this package so as not to
// depend on the lesson engine; an import from outside the standard library
// would bring a dependency back.
func TestStandardLibraryOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s: the view package takes the standard library only", name, path)
			}
		}
	}
}

// TestPredictSaid: an answer is put beside what was measured, and judged
// only when the question has an answer.
func TestPredictSaid(t *testing.T) {
	q := &Predict{Question: "How many GETs?", Choices: []string{"none", "one per Pod"}, Answer: 1}
	pr, err := q.Choose(2)
	if err != nil || q.Said(pr) != "" || q.Verdict(pr) != "" {
		t.Fatalf("chosen, not measured: %+v, %v, said %q", pr, err, q.Said(pr))
	}
	pr = q.Measure(pr, "3 GETs")
	if got := q.Said(pr); got != "you said: one per Pod · measured: 3 GETs" {
		t.Errorf("Said = %q", got)
	}
	if got := q.Verdict(pr); got != "not quite: the answer is none" {
		t.Errorf("Verdict = %q", got)
	}
	var none *Predict
	if _, err := none.Choose(1); err == nil {
		t.Error("a step with no question took an answer")
	}
}

// TestPredictMap: Map words a copy; the lesson's own question is kept.
func TestPredictMap(t *testing.T) {
	q := &Predict{Question: "in echo?", Choices: []string{"echo-a", "echo-b"}, Answer: 2, Line: 7}
	m := q.Map(strings.ToUpper)
	if m.Question != "IN ECHO?" || !slices.Equal(m.Choices, []string{"ECHO-A", "ECHO-B"}) || m.Answer != 2 || m.Line != 7 {
		t.Errorf("Map = %+v", m)
	}
	if q.Question != "in echo?" || q.Choices[0] != "echo-a" {
		t.Errorf("Map changed the original: %+v", q)
	}
	var none *Predict
	if none.Map(strings.ToUpper) != nil {
		t.Error("nil mapped is not nil")
	}
}
