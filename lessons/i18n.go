package lessons

// The course in the languages its articles were written in. A lesson's
// folder holds i18n/LANG.yaml (its title, summary, objectives, instructor
// notes and each step's words) and i18n/LANG.md (its README); the course's
// i18n/LANG.yaml holds the language's name, its glossary and the words the
// handouts and the text guide print around a lesson. Commands, keys, checks
// and what autoplay does come from lesson.yaml alone: a translation cannot
// change what a step does or checks.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// English is the course's own language.
const English = "en"

// Languages are the languages the course is in, English first.
var Languages = []string{English, "vi", "zh", "ru"}

// Course is the course-wide part of a language: i18n/LANG.yaml.
type Course struct {
	Name     string            `yaml:"name"` // in the language itself: "Tiếng Việt"
	Glossary []Term            `yaml:"glossary"`
	Words    map[string]string `yaml:"words"` // by the English format
	// Checks are the words of a step's check (Check.DescribeIn), by the
	// English format.
	Checks map[string]string `yaml:"checks"`
}

// Term is a Kubernetes term as the translation writes it, the English one
// kept beside it in parentheses the first time a lesson uses it.
type Term struct {
	En   string `yaml:"en"`
	Term string `yaml:"term"`
}

// translation is a lesson's i18n/LANG.yaml.
type translation struct {
	Title      string            `yaml:"title"`
	Summary    string            `yaml:"summary"`
	Objectives []string          `yaml:"objectives"`
	Instructor string            `yaml:"instructor"`
	Steps      []stepTranslation `yaml:"steps"`
}

type stepTranslation struct {
	Title   string `yaml:"title"`
	Text    string `yaml:"text"`
	Hint    string `yaml:"hint,omitempty"`
	Note    string `yaml:"note,omitempty"`
	Predict *struct {
		Question string   `yaml:"question"`
		Choices  []string `yaml:"choices"`
	} `yaml:"predict,omitempty"`
}

// LangOf is the language of a POSIX locale ("vi_VN.UTF-8" is vi), English
// for one the course is not in.
func LangOf(locale string) string {
	l := strings.ToLower(locale)
	if i := strings.IndexAny(l, "_.@-"); i >= 0 {
		l = l[:i]
	}
	if slices.Contains(Languages, l) {
		return l
	}
	return English
}

// CheckLang is lang if the course is in it, or an error naming the ones it
// is in.
func CheckLang(lang string) error {
	if slices.Contains(Languages, lang) {
		return nil
	}
	return fmt.Errorf("--lang %q: the course is in %s", lang, strings.Join(Languages, ", "))
}

// LoadLang reads the embedded course in lang: Load's lessons with their
// words translated.
func LoadLang(lang string) ([]*Lesson, error) { return LoadFSLang(embedded, lang) }

// LoadFSLang is LoadFS in lang. A lesson with no translation in lang stays
// in English (TestTranslations holds the course to having them all).
func LoadFSLang(fsys fs.FS, lang string) ([]*Lesson, error) {
	ls, err := LoadFS(fsys)
	if err != nil || lang == English || lang == "" {
		return ls, err
	}
	if err := CheckLang(lang); err != nil {
		return nil, err
	}
	c, err := loadCourse(fsys, lang)
	if err != nil {
		return nil, err
	}
	var errs []error
	for i, l := range ls {
		t, readme, err := readTranslation(fsys, l, lang)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		tl, err := l.translated(t, readme, lang, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ls[i] = tl
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ls, nil
}

// loadCourse reads i18n/LANG.yaml of the course.
func loadCourse(fsys fs.FS, lang string) (*Course, error) {
	file := path.Join("i18n", lang+".yaml")
	data, err := fs.ReadFile(fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		return &Course{Name: lang}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lessons: %w", err)
	}
	var c Course
	if err := strictYAML(data, &c); err != nil {
		return nil, &Error{File: file, Line: yamlLine(err), Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	return &c, nil
}

// readTranslation reads lesson l's i18n/LANG.yaml and i18n/LANG.md;
// fs.ErrNotExist when it has neither.
func readTranslation(fsys fs.FS, l *Lesson, lang string) (*translation, string, error) {
	file := path.Join(l.Dir, "i18n", lang+".yaml")
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, "", err
	}
	readme, err := fs.ReadFile(fsys, path.Join(l.Dir, "i18n", lang+".md"))
	if err != nil {
		return nil, "", &Error{File: path.Join(l.Dir, "i18n", lang+".md"), Msg: "missing: a translated lesson has its prose too"}
	}
	var t translation
	if err := strictYAML(data, &t); err != nil {
		return nil, "", &Error{File: file, Line: yamlLine(err), Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	return &t, string(readme), nil
}

// strictYAML decodes data into v, refusing fields v does not have.
func strictYAML(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// translated is a copy of l with t's words: the same steps, actions and
// checks. Where t lacks what l has (a step, a hint), it is an error.
func (l *Lesson) translated(t *translation, readme, lang string, c *Course) (*Lesson, error) {
	file := path.Join(l.Dir, "i18n", lang+".yaml")
	bad := func(format string, args ...any) error { return &Error{File: file, Msg: fmt.Sprintf(format, args...)} }
	if len(t.Steps) != len(l.Steps) {
		return nil, bad("%d steps, lesson.yaml has %d", len(t.Steps), len(l.Steps))
	}
	out := *l
	out.Lang, out.course = lang, c
	out.Title, out.Summary, out.Instructor, out.README = t.Title, t.Summary, t.Instructor, readme
	out.Objectives = slices.Clone(t.Objectives)
	out.Steps = slices.Clone(l.Steps)
	for i := range out.Steps {
		s, ts := &out.Steps[i], t.Steps[i]
		s.Title, s.Text = ts.Title, ts.Text
		if (ts.Hint != "") != (s.Hint != "") {
			return nil, bad("step %d: a hint in one language only", i+1)
		}
		s.Hint = ts.Hint
		if s.Action != nil {
			a := *s.Action
			if (ts.Note != "") != (a.Note != "") {
				return nil, bad("step %d: a note in one language only", i+1)
			}
			a.Note = ts.Note
			s.Action = &a
		} else if ts.Note != "" {
			return nil, bad("step %d: a note, but the step has no action", i+1)
		}
		switch {
		case (ts.Predict != nil) != (s.Predict != nil):
			return nil, bad("step %d: a question in one language only", i+1)
		case s.Predict != nil:
			if len(ts.Predict.Choices) != len(s.Predict.Choices) {
				return nil, bad("step %d: %d choices, lesson.yaml has %d", i+1, len(ts.Predict.Choices), len(s.Predict.Choices))
			}
			q := *s.Predict
			q.Question, q.Choices = ts.Predict.Question, slices.Clone(ts.Predict.Choices)
			s.Predict = &q
		}
	}
	return &out, nil
}

// w is the lesson's words for the English format f: its language's, or f.
func (l *Lesson) w(f string) string {
	if l.course != nil {
		if t := l.course.Words[f]; t != "" {
			return t
		}
	}
	return f
}

// Words are the formats the handouts print around a lesson's own words,
// each translated in a language's Course.Words.
var Words = []string{
	wordMinutes, wordAfter, wordAfterOne, wordOnly, wordObjectives, wordReading, wordSteps, wordStep,
	wordPredict, wordType, wordPress, wordDo, wordWaits, wordIfNot, wordInstructor,
	wordPointAt, wordWaitsLabel, wordMistakes,
}

const (
	wordMinutes    = "About %d minutes"
	wordAfter      = "after lessons %s"
	wordAfterOne   = "after lesson %s"
	wordOnly       = "on %s only (%s)"
	wordObjectives = "Objectives"
	wordReading    = "Reading"
	wordSteps      = "Steps"
	wordStep       = "Step %d. %s"
	wordPredict    = "Predict first:"
	wordType       = "Type:"
	wordPress      = "**Press** %s on the screen."
	wordDo         = "Do:"
	wordWaits      = "**The check waits for** (within %s):"
	wordIfNot      = "If it does not pass:"
	wordInstructor = "For the instructor"
	// The labels of the instructor's notes, which the lesson files keep in
	// English (TestTranslations holds them to it): the handouts say them.
	wordPointAt    = "Point at:"
	wordWaitsLabel = "Waits:"
	wordMistakes   = "Mistakes:"
)
