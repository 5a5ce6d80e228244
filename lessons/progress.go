package lessons

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

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
	Done    bool      `json:"done"`
	Updated time.Time `json:"updated"`
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
func (p *Progress) Of(l *Lesson) LessonProgress {
	if lp := p.Lessons[l.Dir]; lp != nil {
		return *lp
	}
	return LessonProgress{}
}

// Resume is the step to start lesson l at: where the student left it, or
// the first step of a lesson already done.
func (p *Progress) Resume(l *Lesson) int {
	if lp := p.Of(l); !lp.Done {
		return lp.Step
	}
	return 0
}

// Where says how far the student got in l: "", "at step 2 of 4", "done".
func (p *Progress) Where(l *Lesson) string {
	lp := p.Of(l)
	switch {
	case lp.Done:
		return "done"
	case lp.Step > 0:
		return fmt.Sprintf("at step %d of %d", lp.Step+1, len(l.Steps))
	}
	return ""
}

// Set records that the next step of l is step (len(l.Steps): done).
func (p *Progress) Set(l *Lesson, step int, now time.Time) {
	lp := p.Lessons[l.Dir]
	if lp == nil {
		lp = &LessonProgress{}
		p.Lessons[l.Dir] = lp
	}
	lp.Step = min(max(step, 0), len(l.Steps))
	lp.Done = lp.Done || step >= len(l.Steps)
	lp.Updated = now
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
