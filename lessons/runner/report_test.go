package runner

import (
	"reflect"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/feature/classroom"
)

// TestRecords: what the instructor is told of each lesson the student
// started, in course order, predictions by step number (from 1); Forget
// starts a lesson over.
func TestRecords(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	q := &lessons.Predict{Question: "?", Choices: []string{"a", "b"}, Answer: 2}
	l1 := &lessons.Lesson{Number: 1, Dir: "01-a", Steps: make([]lessons.Step, 2)}
	l2 := &lessons.Lesson{Number: 2, Dir: "02-b", Steps: []lessons.Step{{}, {Predict: q}, {}}}
	l3 := &lessons.Lesson{Number: 3, Dir: "03-c", Steps: make([]lessons.Step, 1)}
	p := &Progress{Lessons: map[string]*LessonProgress{}}
	p.Record(l1, 0, ByHand, now)
	p.Record(l1, 1, Played, now)
	p.Set(l1, 2, now)
	p.Record(l2, 0, Skipped, now)
	p.Predicted(l2, 1, q.Measure(lessons.Prediction{Choice: 2}, "5 ready"), now)
	p.Set(l2, 1, now)
	right := true
	want := []classroom.LessonRecord{
		{Number: 1, Steps: 2, Next: 2, Done: true, How: []string{"hand", "played"}},
		{Number: 2, Steps: 3, Next: 1, How: []string{"skipped", "", ""},
			Predictions: map[int]classroom.Prediction{2: {Choice: 2, Right: &right, Measured: "5 ready"}}},
	}
	if got := p.Records([]*lessons.Lesson{l1, l2, l3}); !reflect.DeepEqual(got, want) {
		t.Errorf("Records:\n got %+v\nwant %+v", got, want)
	}
	p.Forget(l1, now)
	if got := p.Records([]*lessons.Lesson{l1}); !reflect.DeepEqual(got, []classroom.LessonRecord{{Number: 1, Steps: 2}}) {
		t.Errorf("after Forget: %+v", got)
	}
	if p.Resume(l1) != 0 || p.Where(l1) != "" {
		t.Errorf("after Forget, resume at %d, where %q", p.Resume(l1), p.Where(l1))
	}
}

// TestSameSandbox: a lesson with an operator of its own needs a sandbox
// of its own.
func TestSameSandbox(t *testing.T) {
	plain, other := &lessons.Lesson{Number: 1}, &lessons.Lesson{Number: 2}
	own := &lessons.Lesson{Number: 12, Operator: &lessons.Operator{Name: "mine"}}
	tests := []struct {
		a, b *lessons.Lesson
		want bool
	}{
		{plain, other, true},
		{plain, own, false},
		{own, plain, false},
		{own, own, true},
		{own, &lessons.Lesson{Number: 20, Operator: &lessons.Operator{Name: "mine"}}, false},
	}
	for _, tt := range tests {
		if got := SameSandbox(tt.a, tt.b); got != tt.want {
			t.Errorf("lesson %d then %d in one sandbox: %v, want %v", tt.a.Number, tt.b.Number, got, tt.want)
		}
	}
}

// TestPosition: where a student on a step stands, for the instructor.
func TestPosition(t *testing.T) {
	l, err := lessons.Parse("l.yaml", []byte(lesson(okStep)))
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	got := position(l, 0, since, SessionState{Detail: "2 of 3", PlayErr: "boom"}, func(s string) string { return "<" + s + ">" })
	if got.Lesson != l.Number || got.Step != 1 || got.Steps != len(l.Steps) || got.StepTitle != l.Steps[0].Title ||
		!got.Since.Equal(since) || got.Reason != "2 of 3" || got.Error != "boom" || got.Waits == "" || got.Waits[0] != '<' {
		t.Errorf("position: %+v", got)
	}
}

// TestResetTo: r starts this lesson again, r N lesson N; nothing else is a
// reset.
func TestResetTo(t *testing.T) {
	tests := []struct {
		cmd   string
		n     int
		asked bool
		want  bool
	}{
		{"r", 7, false, true}, {"r 3", 3, false, true}, {"r  12", 12, false, true},
		{CmdResetAsked + " 4", 4, true, true},
		{"r x", 0, false, false}, {"rr", 0, false, false}, {"n", 0, false, false}, {"", 0, false, false}, {"3", 0, false, false},
		{CmdResetAsked, 0, false, false},
	}
	for _, tt := range tests {
		n, asked, ok := resetTo(tt.cmd, 7)
		if ok != tt.want || ok && (n != tt.n || asked != tt.asked) {
			t.Errorf("resetTo(%q) = %d, %v, %v; want %d, %v, %v", tt.cmd, n, asked, ok, tt.n, tt.asked, tt.want)
		}
	}
}
