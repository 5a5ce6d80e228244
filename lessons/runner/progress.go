package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/state"
)

// Progress is how far a student got, kept in the state dir so that a
// lesson can be resumed where it was left.
type Progress struct {
	// Lessons by folder name ("03-garbage-collection"): the folder, not the
	// number, so renumbering the course does not mix students' progress up.
	Lessons map[string]*LessonProgress `json:"lessons"`
}

// LessonProgress is one lesson's.
type LessonProgress struct {
	Step    int       `json:"step"` // the next step to do, from 0
	Done    bool      `json:"done"` // the student got past the last step
	Updated time.Time `json:"updated"`
	// How is how each step went, by index; "" for one not behind the
	// student yet. Files from before it was kept have none.
	How []How `json:"how,omitempty"`
	// Predictions are the student's answers to the steps' questions, by
	// step index, with how each went once the step passed.
	Predictions map[int]lessons.Prediction `json:"predictions,omitempty"`
}

// How is how the student got past a step, so that the listing tells one
// who did the work from one who let autoplay do it or skipped it.
type How string

const (
	// ByHand: its check passed on the student's own act (a command, or
	// the key the step names), or it has nothing to check and was read.
	ByHand How = "hand"
	// Played: its check passed after autoplay (a) acted on it.
	Played How = "played"
	// Skipped: the student moved on (n) before its check passed.
	Skipped How = "skipped"
)

// passedHow is how a step whose check passed went.
func passedHow(autoplayed bool) How {
	if autoplayed {
		return Played
	}
	return ByHand
}

// leftHow is how step s went when the student moves on from it; ok is
// false when its pass was recorded already.
func leftHow(s *lessons.Step, passed, autoplayed bool) (how How, ok bool) {
	switch {
	case s.Check == nil:
		return passedHow(autoplayed), true
	case passed:
		return "", false
	}
	return Skipped, true
}

// ProgressFile is where progress is kept in a state dir.
func ProgressFile(d state.Dir) string { return filepath.Join(d.Root, "lessons.json") }

// LoadProgress reads the progress in d; none yet is an empty Progress.
func LoadProgress(d state.Dir) (*Progress, error) {
	p := &Progress{Lessons: map[string]*LessonProgress{}}
	b, err := os.ReadFile(ProgressFile(d))
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lesson progress: %w", err)
	}
	if err := json.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("lesson progress %s: %w", ProgressFile(d), err)
	}
	if p.Lessons == nil {
		p.Lessons = map[string]*LessonProgress{}
	}
	return p, nil
}

// Of is lesson l's progress (zero if not started).
func (p *Progress) Of(l *lessons.Lesson) LessonProgress {
	if lp := p.Lessons[l.Dir]; lp != nil {
		return *lp
	}
	return LessonProgress{}
}

// Resume is the step to start lesson l at: where the student left it, or
// the first step of a lesson already done.
func (p *Progress) Resume(l *lessons.Lesson) int {
	if lp := p.Of(l); !lp.Done {
		return lp.Step
	}
	return 0
}

// Where says how far the student got in l, and for a lesson done how:
// "" (not started), "step 3 of 8", "8/8 by hand", "5/8, 3 played",
// "6/8, 1 played, 1 skipped"; "done" when the file does not say how.
func (p *Progress) Where(l *lessons.Lesson) string {
	lp := p.Of(l)
	n := len(l.Steps)
	count := map[How]int{}
	for _, h := range lp.How[:min(len(lp.How), n)] {
		count[h]++
	}
	recorded := count[ByHand] + count[Played] + count[Skipped]
	switch {
	case n == 0:
		return ""
	case lp.Done && recorded == 0:
		return "done" // an old file, or a course changed since
	case lp.Done && count[ByHand] == n:
		return fmt.Sprintf("%d/%d by hand", n, n)
	case lp.Done:
		parts := []string{fmt.Sprintf("%d/%d", count[ByHand], n)}
		for _, c := range []struct {
			n    int
			what string
		}{{count[Played], "played"}, {count[Skipped], "skipped"}, {n - recorded, "not recorded"}} {
			if c.n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
			}
		}
		return strings.Join(parts, ", ")
	case lp.Step > 0 || recorded > 0:
		return fmt.Sprintf("step %d of %d", min(lp.Step, n-1)+1, n)
	}
	return ""
}

// Set records that the next step of l is step (len(l.Steps): done).
func (p *Progress) Set(l *lessons.Lesson, step int, now time.Time) {
	lp := p.lesson(l)
	lp.Step = min(max(step, 0), len(l.Steps))
	lp.Done = lp.Done || step >= len(l.Steps)
	lp.Updated = now
}

// Record records how step i of l went. Doing a step again replaces its
// outcome, but skipping it does not undo a pass: a student who goes back
// to reread a step they did and moves on did not skip it.
func (p *Progress) Record(l *lessons.Lesson, i int, how How, now time.Time) {
	if i < 0 || i >= len(l.Steps) {
		return
	}
	lp := p.lesson(l)
	// One entry per step, whatever an older course left.
	if len(lp.How) != len(l.Steps) {
		h := make([]How, len(l.Steps))
		copy(h, lp.How)
		lp.How = h
	}
	if how == Skipped && (lp.How[i] == ByHand || lp.How[i] == Played) {
		return
	}
	lp.How[i] = how
	lp.Updated = now
}

// Predicted records the student's answer to step i's question and, once
// the step passed, how it went; an unanswered question records nothing.
func (p *Progress) Predicted(l *lessons.Lesson, i int, pr lessons.Prediction, now time.Time) {
	if i < 0 || i >= len(l.Steps) || l.Steps[i].Predict == nil || pr.Choice < 1 {
		return
	}
	lp := p.lesson(l)
	if lp.Predictions == nil {
		lp.Predictions = map[int]lessons.Prediction{}
	}
	lp.Predictions[i] = pr
	lp.Updated = now
}

// Listed is Where and, if any, Foresight: what a lesson list shows.
func (p *Progress) Listed(l *lessons.Lesson) string {
	w, f := p.Where(l), p.Foresight(l)
	switch {
	case f == "":
		return w
	case w == "":
		return f
	}
	return w + " · " + f
}

// Foresight says how the student's predictions in l went: "2 of 3
// predicted right", "" when none had a right answer yet.
func (p *Progress) Foresight(l *lessons.Lesson) string {
	right, judged := 0, 0
	for _, pr := range p.Of(l).Predictions {
		if pr.Right != nil {
			judged++
			if *pr.Right {
				right++
			}
		}
	}
	if judged == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d predicted right", right, judged)
}

// lesson is l's progress, made if there is none yet.
func (p *Progress) lesson(l *lessons.Lesson) *LessonProgress {
	lp := p.Lessons[l.Dir]
	if lp == nil {
		lp = &LessonProgress{}
		p.Lessons[l.Dir] = lp
	}
	return lp
}

// Save writes the progress to d, atomically (a crash leaves the old file).
func (p *Progress) Save(d state.Dir) error {
	if err := os.MkdirAll(d.Root, 0o700); err != nil {
		return fmt.Errorf("lesson progress: %w", err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("lesson progress: %w", err)
	}
	tmp, err := os.CreateTemp(d.Root, "lessons-*.json")
	if err != nil {
		return fmt.Errorf("lesson progress: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("lesson progress: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("lesson progress: %w", err)
	}
	if err := os.Rename(tmp.Name(), ProgressFile(d)); err != nil {
		return fmt.Errorf("lesson progress: %w", err)
	}
	return nil
}
