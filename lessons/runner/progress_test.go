package runner

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/state"
)

// progressOp is one thing a session does to the progress: set the next
// step (set >= 0), or record how a step went.
type progressOp struct {
	set  int
	step int
	how  How
}

func next(i int) progressOp       { return progressOp{set: i} }
func did(i int, h How) progressOp { return progressOp{set: -1, step: i, how: h} }

// How each step went, and what the list says of it, as a student moves.
func TestProgressRecord(t *testing.T) {
	l := &lessons.Lesson{Dir: "04-x", Steps: make([]lessons.Step, 4)}
	allHand := []progressOp{did(0, ByHand), did(1, ByHand), did(2, ByHand), did(3, ByHand), next(4)}
	tests := []struct {
		name  string
		ops   []progressOp
		how   []How
		done  bool
		where string
	}{
		{"not started", nil, nil, false, ""},
		{"shown, nothing done", []progressOp{next(0)}, nil, false, ""},
		{"in progress", []progressOp{next(0), did(0, ByHand), next(1), did(1, Played), next(2)},
			[]How{ByHand, Played, "", ""}, false, "step 3 of 4"},
		{"started, then back to step 1", []progressOp{did(0, ByHand), next(1), next(0)},
			[]How{ByHand, "", "", ""}, false, "step 1 of 4"},
		{"all by hand", allHand, []How{ByHand, ByHand, ByHand, ByHand}, true, "4/4 by hand"},
		{"some played", []progressOp{did(0, Played), did(1, ByHand), did(2, Played), did(3, ByHand), next(4)},
			[]How{Played, ByHand, Played, ByHand}, true, "2/4, 2 played"},
		{"played and skipped", []progressOp{did(0, ByHand), did(1, Skipped), did(2, Played), did(3, ByHand), next(4)},
			[]How{ByHand, Skipped, Played, ByHand}, true, "2/4, 1 played, 1 skipped"},
		{"n through it all", []progressOp{did(0, Skipped), did(1, Skipped), did(2, Skipped), did(3, Skipped), next(4)},
			[]How{Skipped, Skipped, Skipped, Skipped}, true, "0/4, 4 skipped"},
		{"last step not reached: not done", []progressOp{did(0, ByHand), did(1, ByHand), did(2, ByHand), next(3)},
			[]How{ByHand, ByHand, ByHand, ""}, false, "step 4 of 4"},
		{"back and done again by hand replaces played", append([]progressOp{did(2, Played)}, allHand...),
			[]How{ByHand, ByHand, ByHand, ByHand}, true, "4/4 by hand"},
		{"back and played replaces by hand", append(allHand, next(3), did(3, Played), next(4)),
			[]How{ByHand, ByHand, ByHand, Played}, true, "3/4, 1 played"},
		{"a pass replaces a skip", append(allHand[:1:1], did(1, Skipped), did(1, ByHand)),
			[]How{ByHand, ByHand, "", ""}, false, "step 1 of 4"},
		{"reread and moved on keeps the pass", append(allHand, next(2), did(2, Skipped), did(3, Skipped), next(4)),
			[]How{ByHand, ByHand, ByHand, ByHand}, true, "4/4 by hand"},
		{"done again keeps done", append(allHand, next(0), did(0, Skipped)),
			[]How{ByHand, ByHand, ByHand, ByHand}, true, "4/4 by hand"},
		{"resumed from an old file: first steps unknown", []progressOp{next(2), did(2, ByHand), did(3, Played), next(4)},
			[]How{"", "", ByHand, Played}, true, "1/4, 1 played, 2 not recorded"},
		{"steps out of range are ignored", []progressOp{did(-1, ByHand), did(4, ByHand), next(1)},
			nil, false, "step 2 of 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Progress{Lessons: map[string]*LessonProgress{}}
			for _, op := range tt.ops {
				if op.set >= 0 {
					p.Set(l, op.set, t0)
				} else {
					p.Record(l, op.step, op.how, t0)
				}
			}
			got := p.Of(l)
			if !slices.Equal(got.How, tt.how) || got.Done != tt.done {
				t.Errorf("progress = %+v, want how %q, done %v", got, tt.how, tt.done)
			}
			if w := p.Where(l); w != tt.where {
				t.Errorf("Where = %q, want %q", w, tt.where)
			}
		})
	}
}

// Where reads what is saved, whatever the course became since.
func TestProgressWhere(t *testing.T) {
	l := &lessons.Lesson{Dir: "08-x", Steps: make([]lessons.Step, 8)}
	hand := func(n int) []How { return slices.Repeat([]How{ByHand}, n) }
	tests := []struct {
		name string
		lp   LessonProgress
		want string
	}{
		{"8/8", LessonProgress{Step: 8, Done: true, How: hand(8)}, "8/8 by hand"},
		{"3 played", LessonProgress{Step: 8, Done: true, How: append(hand(5), Played, Played, Played)}, "5/8, 3 played"},
		{"1 played 1 skipped", LessonProgress{Step: 8, Done: true, How: append(hand(6), Skipped, Played)}, "6/8, 1 played, 1 skipped"},
		{"in progress", LessonProgress{Step: 2, How: hand(2)}, "step 3 of 8"},
		{"done without how: an old file", LessonProgress{Step: 8, Done: true}, "done"},
		{"in progress, an old file", LessonProgress{Step: 2}, "step 3 of 8"},
		{"course shrank: extra steps ignored", LessonProgress{Step: 10, Done: true, How: append(hand(8), Skipped, Skipped)}, "8/8 by hand"},
		{"course grew: new steps not recorded", LessonProgress{Step: 6, Done: true, How: hand(6)}, "6/8, 2 not recorded"},
		{"course shrank under the next step", LessonProgress{Step: 9, How: hand(9)}, "step 8 of 8"},
		{"an unknown outcome counts as not recorded", LessonProgress{Step: 8, Done: true, How: append(hand(7), "cheated")}, "7/8, 1 not recorded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Progress{Lessons: map[string]*LessonProgress{l.Dir: &tt.lp}}
			if got := p.Where(l); got != tt.want {
				t.Errorf("Where = %q, want %q", got, tt.want)
			}
		})
	}
}

// A lessons.json from before outcomes were kept still loads, and saving it
// again keeps it in the old shape until a step's outcome is known.
func TestProgressOldFile(t *testing.T) {
	d := state.Dir{Root: t.TempDir()}
	old := `{
  "lessons": {
    "02-x": {"step": 1, "done": false, "updated": "2026-01-02T03:04:05Z"},
    "03-y": {"step": 0, "done": true, "updated": "2026-01-02T03:04:05Z"}
  }
}`
	if err := writeFile(ProgressFile(d), old); err != nil {
		t.Fatal(err)
	}
	p, err := LoadProgress(d)
	if err != nil {
		t.Fatal(err)
	}
	l2 := &lessons.Lesson{Dir: "02-x", Steps: make([]lessons.Step, 2)}
	l3 := &lessons.Lesson{Dir: "03-y", Steps: make([]lessons.Step, 3)}
	tests := []struct {
		l      *lessons.Lesson
		where  string
		resume int
	}{
		{l2, "step 2 of 2", 1},
		{l3, "done", 0},
		{&lessons.Lesson{Dir: "04-z", Steps: make([]lessons.Step, 3)}, "", 0},
	}
	for _, tt := range tests {
		if got, resume := p.Where(tt.l), p.Resume(tt.l); got != tt.where || resume != tt.resume {
			t.Errorf("%s: Where %q, Resume %d; want %q, %d", tt.l.Dir, got, resume, tt.where, tt.resume)
		}
	}
	if want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC); !p.Of(l2).Updated.Equal(want) {
		t.Errorf("updated = %v, want %v", p.Of(l2).Updated, want)
	}
	if err := p.Save(d); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(ProgressFile(d)); strings.Contains(string(b), `"how"`) {
		t.Errorf("saved with no outcome known, yet:\n%s", b)
	}
	// The old lesson goes on: its last step, by hand, is recorded and kept.
	p.Record(l2, 1, ByHand, t0)
	p.Set(l2, 2, t0)
	if err := p.Save(d); err != nil {
		t.Fatal(err)
	}
	if p, err = LoadProgress(d); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Of(l2).How, []How{"", ByHand}; !slices.Equal(got, want) {
		t.Errorf("how after reload = %q, want %q", got, want)
	}
	if got := p.Where(l2); got != "1/2, 1 not recorded" {
		t.Errorf("Where after reload = %q", got)
	}
}

// How a step went, told by what the student did on it: the rule both the
// screen (Session) and the text mode (Guide) follow.
func TestStepHow(t *testing.T) {
	checked, unchecked := &lessons.Step{Check: &lessons.Check{}}, &lessons.Step{}
	tests := []struct {
		name       string
		step       *lessons.Step
		passed     bool
		autoplayed bool
		how        How // on moving on; "" when nothing is recorded then
		onPass     How
	}{
		{"check passed by hand", checked, true, false, "", ByHand},
		{"check passed after a", checked, true, true, "", Played},
		{"n before the check passed", checked, false, false, Skipped, ByHand},
		{"n while autoplay acts", checked, false, true, Skipped, Played},
		{"nothing to check, read", unchecked, true, false, ByHand, ByHand},
		{"nothing to check, played", unchecked, true, true, Played, Played},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			how, ok := leftHow(tt.step, tt.passed, tt.autoplayed)
			if how != tt.how || ok != (tt.how != "") {
				t.Errorf("leftHow = %q, %v; want %q", how, ok, tt.how)
			}
			if got := passedHow(tt.autoplayed); got != tt.onPass {
				t.Errorf("passedHow = %q, want %q", got, tt.onPass)
			}
		})
	}
}

// The student's predictions are kept with how each went, survive a save
// and a load, and the list says how many were right.
func TestProgressPredictions(t *testing.T) {
	q := &lessons.Predict{Question: "who repairs first?", Choices: []string{"shell", "client-go"}, Answer: 2}
	open := &lessons.Predict{Question: "how long?", Choices: []string{"<1s", ">1s"}} // the measurement decides
	l := &lessons.Lesson{Dir: "05-x", Steps: []lessons.Step{{Predict: q}, {Predict: open}, {}, {Predict: q}}}
	right, wrong := q.Measure(lessons.Prediction{Choice: 2}, "client-go 22ms"), q.Measure(lessons.Prediction{Choice: 1}, "client-go 20ms")
	tests := []struct {
		name string
		do   func(p *Progress)
		want string
		kept int
	}{
		{"none answered", func(p *Progress) { p.Predicted(l, 0, lessons.Prediction{}, t0) }, "", 0},
		{"a step with no question", func(p *Progress) { p.Predicted(l, 2, lessons.Prediction{Choice: 1}, t0) }, "", 0},
		{"answered, not measured yet", func(p *Progress) { p.Predicted(l, 0, lessons.Prediction{Choice: 2}, t0) }, "", 1},
		{"one right", func(p *Progress) { p.Predicted(l, 0, right, t0) }, "1 of 1 predicted right", 1},
		{"one right, one wrong, one open", func(p *Progress) {
			p.Predicted(l, 0, right, t0)
			p.Predicted(l, 1, open.Measure(lessons.Prediction{Choice: 1}, "0.4s"), t0)
			p.Predicted(l, 3, wrong, t0)
		}, "1 of 2 predicted right", 3},
		{"answered again replaces", func(p *Progress) {
			p.Predicted(l, 3, wrong, t0)
			p.Predicted(l, 3, right, t0)
		}, "1 of 1 predicted right", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := state.Dir{Root: t.TempDir()}
			p := &Progress{Lessons: map[string]*LessonProgress{}}
			tt.do(p)
			if err := p.Save(d); err != nil {
				t.Fatal(err)
			}
			p, err := LoadProgress(d)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Foresight(l); got != tt.want {
				t.Errorf("Foresight = %q, want %q", got, tt.want)
			}
			if got := len(p.Of(l).Predictions); got != tt.kept {
				t.Errorf("%d predictions kept, want %d", got, tt.kept)
			}
		})
	}
	p := &Progress{Lessons: map[string]*LessonProgress{}}
	p.Predicted(l, 0, right, t0)
	p.Set(l, 4, t0)
	if got := p.Listed(l); got != "done · 1 of 1 predicted right" {
		t.Errorf("Listed = %q", got)
	}
	if got := p.Of(l).Predictions[0].Measured; got != "client-go 22ms" {
		t.Errorf("measured kept = %q", got)
	}
}

func TestProgress(t *testing.T) {
	d := state.Dir{Root: t.TempDir()}
	p, err := LoadProgress(d)
	if err != nil || len(p.Lessons) != 0 {
		t.Fatalf("fresh progress = %+v, %v", p, err)
	}
	l := &lessons.Lesson{Dir: "03-x", Steps: make([]lessons.Step, 4)}
	p.Set(l, 2, t0)
	if err := p.Save(d); err != nil {
		t.Fatal(err)
	}
	p, err = LoadProgress(d)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Of(l); got.Step != 2 || got.Done || !got.Updated.Equal(t0) {
		t.Fatalf("progress = %+v", got)
	}
	if got, where := p.Resume(l), p.Where(l); got != 2 || where != "step 3 of 4" {
		t.Fatalf("resume at %d (%q), want 2 (step 3 of 4)", got, where)
	}
	p.Set(l, 9, t0) // past the end: done
	p.Set(l, 3, t0) // going back keeps it done
	if got := p.Of(l); got.Step != 3 || !got.Done {
		t.Fatalf("progress = %+v", got)
	}
	if got, where := p.Resume(l), p.Where(l); got != 0 || where != "done" {
		t.Fatalf("a lesson done resumes at %d (%q), want 0 (done)", got, where)
	}
	if err := writeFile(ProgressFile(d), "{not json"); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadProgress(d); err == nil || !strings.Contains(err.Error(), "lessons.json") {
		t.Fatalf("corrupt progress: %v", err)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
