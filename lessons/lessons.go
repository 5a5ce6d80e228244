// Package lessons is Reconcile Lab's course: each lesson is a folder
// NN-slug holding README.md (the prose) and lesson.yaml (the steps), embedded
// in the binary. A step tells the student what to do (the kubectl command to
// type, the key to press on the screen), says what autoplay does instead
// (a closed set of sandbox actions), and checks what really happened (a
// closed set of checks over the world model and the trace) before a deadline.
//
// The loader validates every field and reports errors as FILE:LINE: message.
package lessons

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kkloud/rlab/operators/style"
)

// The Go projects of lessons 20 and 22 are in folders whose names begin
// with _, which go build ./... skips: each is a module of its own, not a
// package of rlab's. _broken holds the versions a project_test's tests must
// fail on.
//
//go:embed [0-9][0-9]-*/README.md [0-9][0-9]-*/*.yaml [0-9][0-9]-*/*.sh
//go:embed [0-9][0-9]-*/i18n i18n
//go:embed all:[0-9][0-9]-*/_project all:[0-9][0-9]-*/_steps all:[0-9][0-9]-*/_broken
var embedded embed.FS

// Lesson is one lesson of the course.
type Lesson struct {
	Number  int    // from the folder name, 01 → 1
	Slug    string // "reconcile-loop"
	Dir     string // "01-reconcile-loop"
	Title   string
	Summary string
	README  string
	Steps   []Step
	// Backends are the sandbox backends the lesson runs on (empty: every
	// one), for a lesson that needs what some backend lacks: lesson 17's
	// 120 Pods fit kwok's fake Nodes, not kind's one real node.
	Backends []string
	// Needs says why, for the student whose backend is not listed.
	Needs string
	// Operator, if set, is the student's own operator the lesson grades:
	// rlab runs it (or the lesson's starter, when the student brings none)
	// beside the built-in styles.
	Operator *Operator

	// What the lesson is for, for the student and the instructor.
	Minutes    int      // the expected time by hand, reading included
	Objectives []string // 2 or 3 sentences a student checks themselves against
	Requires   []int    // the lessons to have done first
	Instructor string   // what to point at, the waits, the usual mistakes

	// Lang is the language of its words ("" or English: lesson.yaml's);
	// course holds that language's words around them.
	Lang   string
	course *Course
}

// Operator is the student's operator of a lesson that has one.
type Operator struct {
	Name style.Style // its --operator NAME: "mine"
	// Starter is the operator the student begins with, in the lesson's
	// folder (a bash script, or a Go project); rlab runs it when the
	// student brings none.
	Starter File
	// From, if set, is the lesson whose Go project this one continues:
	// the starter is that lesson's project as its step FromStep (its last
	// if 0) leaves it, with this lesson's folder laid over it.
	From, FromStep int
	Line           int
}

// File is a version of the student's operator in a lesson's folder: a
// bash script (Data), or a Go project (Files), run with go run ./cmd.
type File struct {
	Name string // "starter.sh", or a project's folder: "_project"
	Data []byte // read by LoadFS
	// Files of a project, by slash-separated path in its module:
	// "cmd/main.go". Always the whole project: a step's folder holds only
	// the files its fix changes, and readFiles lays them over the version
	// before at load.
	Files map[string][]byte
}

// IsProject says whether f is a Go project, not a script.
func (f File) IsProject() bool { return f.Files != nil }

// goModName is the name a project's go.mod has in the lesson's folder: a
// go.mod there would make the folder a module of its own, which go:embed
// refuses to reach into.
const goModName = "go.mod.txt"

// Version is the operator as step i (from 0) leaves it: the script of its
// last run_operator (or run_project) at or before step i, else the starter.
func (l *Lesson) Version(i int) (File, error) {
	if l.Operator == nil {
		return File{}, fmt.Errorf("lesson %d has no operator of yours to write", l.Number)
	}
	if i < 0 || i >= len(l.Steps) {
		return File{}, fmt.Errorf("lesson %d has steps 1 to %d", l.Number, len(l.Steps))
	}
	f := l.Operator.Starter
	for _, s := range l.Steps[:i+1] {
		if s.Action == nil {
			continue
		}
		for _, op := range s.Action.Play {
			switch op.Name {
			case ActRunOperator:
				f = op.Args.File("file")
			case ActRunProject:
				f = op.Args.File("project")
			}
		}
	}
	return f, nil
}

// overlay is project base with the files of a step's fix laid over it, under
// the step's name.
func overlay(base, step File) File {
	out := File{Name: step.Name, Files: make(map[string][]byte, len(base.Files)+len(step.Files))}
	maps.Copy(out.Files, base.Files)
	maps.Copy(out.Files, step.Files)
	return out
}

// RunsOn reports whether the lesson runs on b.
func (l *Lesson) RunsOn(b string) bool {
	return len(l.Backends) == 0 || slices.Contains(l.Backends, b)
}

// NotOn says why the lesson does not run on b, "" if it does.
func (l *Lesson) NotOn(b string) string {
	if l.RunsOn(b) {
		return ""
	}
	return fmt.Sprintf("lesson %d runs on %s only (it needs %s); this sandbox is %s",
		l.Number, strings.Join(l.Backends, " or "), l.Needs, b)
}

// Step is one thing to do and see.
type Step struct {
	Title string
	Text  string
	// Action is what the student is asked to do; nil for a step that only
	// shows something.
	Action *Action
	// Check is what must happen; nil for a step with nothing to check.
	Check *Check
	// Predict, if set, is a question the student answers before acting;
	// the check measures the outcome.
	Predict *Predict
	// Hint is shown when the check has not passed after HintAfter.
	Hint      string
	HintAfter time.Duration
	Line      int // of the step in lesson.yaml
}

// Action is what the student does, and what autoplay does instead.
type Action struct {
	Kubectl string // the command to type in another terminal
	Key     string // the key to press on the screen, "" if none
	// Note says what to do when it is neither (kill -9 a pid; a restart
	// only rlab can do).
	Note string
	// Answer is the lesson's version of a file the student writes and the
	// command reads (lesson 16's policy, from the skeleton in the note), in
	// the lesson's folder: by hand, it stands in for the student's file.
	Answer File
	Play   []Op // what autoplay performs, in order; none for a command that only shows something
}

// Op is one sandbox action with its arguments, validated against actions.
type Op struct {
	Name string
	Args Args
	Line int
}

// Check is what must happen within a deadline: every condition at once.
type Check struct {
	Within time.Duration // deadline from the end of the step's action
	// Hold, if set, is how long the conditions must keep holding: for what
	// must *not* change (an edit that nobody repairs).
	Hold  time.Duration
	Conds []Cond
	Line  int
	// Gated: nothing passes until the student acts (Step.Gated).
	Gated bool
}

// Cond is one condition with its arguments, validated against checks.
type Cond struct {
	Kind string
	Args Args
	Line int
}

// Defaults for what a lesson may leave out.
const (
	DefaultWithin    = 60 * time.Second
	DefaultHintAfter = 20 * time.Second
	maxDuration      = 10 * time.Minute
)

// Error is one problem in a lesson file, at a line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Load reads and validates the embedded lessons.
func Load() ([]*Lesson, error) { return LoadFS(embedded) }

var dirRE = regexp.MustCompile(`^([0-9]{2})-([a-z0-9]+(?:-[a-z0-9]+)*)$`)

// LoadFS reads and validates every NN-slug folder of fsys, sorted by
// number. All problems are returned, joined.
func LoadFS(fsys fs.FS) ([]*Lesson, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("lessons: %w", err)
	}
	var (
		out  []*Lesson
		errs []error
		seen = map[int]string{}
	)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		m := dirRE.FindStringSubmatch(e.Name())
		if m == nil {
			if e.Name()[0] >= '0' && e.Name()[0] <= '9' {
				errs = append(errs, &Error{File: e.Name(), Msg: "folder name must be NN-slug, e.g. 01-reconcile-loop"})
			}
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if other, dup := seen[n]; dup {
			errs = append(errs, &Error{File: e.Name(), Msg: "lesson number " + m[1] + " is also used by " + other})
			continue
		}
		seen[n] = e.Name()
		readme, err := fs.ReadFile(fsys, path.Join(e.Name(), "README.md"))
		if err != nil {
			errs = append(errs, &Error{File: path.Join(e.Name(), "README.md"), Msg: "missing: every lesson has its prose"})
			continue
		}
		file := path.Join(e.Name(), "lesson.yaml")
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			errs = append(errs, &Error{File: file, Msg: "missing"})
			continue
		}
		l, err := Parse(file, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l.Number, l.Slug, l.Dir, l.README = n, m[2], e.Name(), string(readme)
		var base *File
		if l.Operator != nil && l.Operator.From != 0 {
			i := slices.IndexFunc(out, func(o *Lesson) bool { return o.Number == l.Operator.From })
			if i < 0 || out[i].Operator == nil || !out[i].Operator.Starter.IsProject() {
				errs = append(errs, &Error{File: file, Line: l.Operator.Line,
					Msg: fmt.Sprintf("operator: from_lesson %d: no earlier lesson with a Go project of the student's", l.Operator.From)})
				continue
			}
			step := len(out[i].Steps)
			if l.Operator.FromStep > 0 {
				step = l.Operator.FromStep
			}
			last, err := out[i].Version(step - 1)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			base = &last
		}
		if err := readFiles(fsys, file, l, base); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, l)
	}
	for _, l := range out {
		for _, r := range l.Requires {
			if r >= l.Number || seen[r] == "" {
				errs = append(errs, &Error{File: path.Join(l.Dir, "lesson.yaml"),
					Msg: fmt.Sprintf("requires: lesson %d is not an earlier lesson of the course", r)})
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(out, func(a, b *Lesson) int { return a.Number - b.Number })
	return out, nil
}

// readFiles reads the scripts l names (its starter, the files its actions
// play) from its folder; file names lesson.yaml in errors. A project's
// starter is laid over base, if given (from_lesson).
func readFiles(fsys fs.FS, file string, l *Lesson, base *File) error {
	var errs []error
	read := func(f *File, line int) {
		if isProjectName(f.Name) {
			files, err := readProject(fsys, path.Join(path.Dir(file), f.Name))
			if err != nil {
				errs = append(errs, &Error{File: file, Line: line, Msg: err.Error()})
			}
			f.Files = files
			return
		}
		data, err := fs.ReadFile(fsys, path.Join(path.Dir(file), f.Name))
		if err != nil {
			errs = append(errs, &Error{File: file, Line: line, Msg: fmt.Sprintf("no file %s in %s", f.Name, path.Dir(file))})
			return
		}
		f.Data = data
	}
	var last File // the project as the steps so far leave it
	if l.Operator != nil {
		read(&l.Operator.Starter, l.Operator.Line)
		if base != nil {
			l.Operator.Starter = overlay(*base, l.Operator.Starter)
		}
		last = l.Operator.Starter
	}
	for _, s := range l.Steps {
		if s.Check != nil {
			// A check's project (project_test's fails_with) is laid over
			// the student's when it runs: read as it is.
			for _, c := range s.Check.Conds {
				for k, v := range c.Args {
					if f, ok := v.(File); ok {
						read(&f, c.Line)
						c.Args[k] = f
					}
				}
			}
		}
		if s.Action == nil {
			continue
		}
		if s.Action.Answer.Name != "" {
			read(&s.Action.Answer, s.Line)
		}
		for _, op := range s.Action.Play {
			for k, v := range op.Args {
				if f, ok := v.(File); ok {
					read(&f, op.Line)
					if op.Name == ActRunProject && l.Operator != nil {
						// A step's folder holds the files its fix changes: the
						// version it runs is the one before with them laid over.
						f = overlay(last, f)
						last = f
					}
					op.Args[k] = f
				}
			}
		}
	}
	return errors.Join(errs...)
}

// readProject reads the files under folder dir of fsys, by path in the
// folder, go.mod under its own name.
func readProject(fsys fs.FS, dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, dir+"/")
		if path.Base(name) == goModName {
			name = path.Join(path.Dir(name), "go.mod")
		}
		files[name] = data
		return nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("no folder %s: %w", dir, err)
	case len(files) == 0:
		return nil, fmt.Errorf("folder %s is empty", dir)
	}
	return files, nil
}

// Find returns lesson n.
func Find(all []*Lesson, n int) (*Lesson, error) {
	for _, l := range all {
		if l.Number == n {
			return l, nil
		}
	}
	return nil, fmt.Errorf("no lesson %d (there are %d; see rlab lesson list)", n, len(all))
}

// LoadOne loads the course and finds lesson n in it.
func LoadOne(n int) (all []*Lesson, l *Lesson, err error) {
	if all, err = Load(); err != nil {
		return nil, nil, err
	}
	l, err = Find(all, n)
	return all, l, err
}

// parser collects errors with their lines for one file.
type parser struct {
	file string
	errs []error
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// Parse validates one lesson.yaml. file names it in errors.
func Parse(file string, data []byte) (*Lesson, error) {
	p := &parser{file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// yaml.v3 says "yaml: line N: ..."; keep its words, add the file.
		return nil, &Error{File: file, Line: yamlLine(err), Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &Error{File: file, Msg: "empty lesson: want title, summary and steps"}
	}
	l := p.lesson(doc.Content[0])
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return l, nil
}

var yamlLineRE = regexp.MustCompile(`line ([0-9]+)`)

func yamlLine(err error) int {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// fields checks that n is a mapping with only the allowed keys, no key
// twice, and the required ones; it returns the values by key.
func (p *parser) fields(n *yaml.Node, what string, required, optional []string) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s: want a mapping, got %s", what, kindName(n))
		return nil
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, "%s: keys must be plain words", what)
			continue
		}
		if _, dup := out[k.Value]; dup {
			p.errorf(k, "%s: %q given twice", what, k.Value)
			continue
		}
		if !slices.Contains(required, k.Value) && !slices.Contains(optional, k.Value) {
			p.errorf(k, "%s: unknown field %q (want %s)", what, k.Value, strings.Join(append(slices.Clone(required), optional...), ", "))
			continue
		}
		if v.Kind == yaml.AliasNode || v.Anchor != "" {
			p.errorf(v, "%s: anchors and aliases are not used in lessons", what)
			continue
		}
		out[k.Value] = v
	}
	for _, r := range required {
		if _, ok := out[r]; !ok {
			p.errorf(n, "%s: %q is required", what, r)
		}
	}
	return out
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "something else"
}

// text is a non-empty string scalar.
func (p *parser) text(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.errorf(n, "%s: want text, got %s", what, kindName(n))
		return ""
	}
	s := strings.TrimSpace(n.Value)
	if s == "" {
		p.errorf(n, "%s: empty", what)
	}
	return s
}

func (p *parser) duration(n *yaml.Node, what string) time.Duration {
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, "%s: want a duration like 30s, got %s", what, kindName(n))
		return 0
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil || d <= 0 || d > maxDuration {
		p.errorf(n, "%s: want a duration between 1ms and %s like 30s, got %q", what, maxDuration, n.Value)
		return 0
	}
	return d
}

func (p *parser) lesson(n *yaml.Node) *Lesson {
	// What a lesson is for is optional here; every lesson of the course
	// has it (TestEveryLessonSaysWhatItIsFor).
	f := p.fields(n, "lesson", []string{"title", "summary", "steps"},
		[]string{"minutes", "objectives", "requires", "instructor", "backends", "needs", "operator"})
	if f == nil {
		return nil
	}
	l := &Lesson{}
	if v := f["minutes"]; v != nil {
		m, err := strconv.Atoi(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil || m < 1 || m > 120 {
			p.errorf(v, "minutes: want the expected time by hand, 1 to 120")
		}
		l.Minutes = m
	}
	if v := f["objectives"]; v != nil {
		if v.Kind != yaml.SequenceNode || len(v.Content) < 2 || len(v.Content) > 3 {
			p.errorf(v, "objectives: want 2 or 3 sentences a student can check themselves against")
		} else {
			for i, o := range v.Content {
				l.Objectives = append(l.Objectives, p.text(o, fmt.Sprintf("objective %d", i+1)))
			}
		}
	}
	if v := f["requires"]; v != nil {
		if v.Kind != yaml.SequenceNode {
			p.errorf(v, "requires: want a list of lesson numbers")
		} else {
			for _, r := range v.Content {
				m, err := strconv.Atoi(r.Value)
				if r.Kind != yaml.ScalarNode || err != nil || m < 1 {
					p.errorf(r, "requires: %q is not a lesson number", r.Value)
					continue
				}
				l.Requires = append(l.Requires, m)
			}
		}
	}
	if v := f["instructor"]; v != nil {
		l.Instructor = p.text(v, "instructor")
	}
	if v := f["backends"]; v != nil {
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			p.errorf(v, "backends: want a list of %s", strings.Join(BackendNames, ", "))
		}
		for _, b := range v.Content {
			if b.Kind != yaml.ScalarNode || !slices.Contains(BackendNames, b.Value) {
				p.errorf(b, "backends: %s is not one of %s", kindName(b), strings.Join(BackendNames, ", "))
				continue
			}
			l.Backends = append(l.Backends, b.Value)
		}
		if f["needs"] == nil {
			p.errorf(v, "backends: say what the others lack in needs")
		}
	}
	if v := f["needs"]; v != nil {
		l.Needs = p.text(v, "needs")
	}
	if v := f["operator"]; v != nil {
		l.Operator = p.operator(v)
	}
	if v := f["title"]; v != nil {
		l.Title = p.text(v, "title")
	}
	if v := f["summary"]; v != nil {
		l.Summary = p.text(v, "summary")
	}
	if v := f["steps"]; v != nil {
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			p.errorf(v, "steps: want a list of at least one step")
		} else {
			for i, s := range v.Content {
				l.Steps = append(l.Steps, p.step(s, fmt.Sprintf("step %d", i+1)))
			}
		}
	}
	p.sameOperator(l)
	return l
}

// operator reads `operator: {name: mine, starter: starter.sh}`, or for a Go
// project `operator: {name: mine, project: _project}`.
func (p *parser) operator(n *yaml.Node) *Operator {
	f := p.fields(n, "operator", []string{"name"}, []string{"starter", "project", "from_lesson", "from_step"})
	if f == nil {
		return nil
	}
	o := &Operator{Line: n.Line}
	if v := f["name"]; v != nil {
		if name, ok := p.value(v, "operator: name", tOperator); ok {
			o.Name = style.Style(name.(string))
		}
	}
	if v := f["starter"]; v != nil {
		if file, ok := p.value(v, "operator: starter", tFile); ok {
			o.Starter = file.(File)
		}
	}
	if v := f["project"]; v != nil {
		if file, ok := p.value(v, "operator: project", tProject); ok {
			o.Starter = file.(File)
		}
	}
	if v := f["from_lesson"]; v != nil {
		if from, ok := p.value(v, "operator: from_lesson", tInt); ok {
			o.From = from.(int)
		}
		if f["project"] == nil {
			p.errorf(n, "operator: from_lesson continues a Go project: give project too")
		}
	}
	if v := f["from_step"]; v != nil {
		if step, ok := p.value(v, "operator: from_step", tInt); ok {
			o.FromStep = step.(int)
		}
		if f["from_lesson"] == nil || o.FromStep < 1 {
			p.errorf(v, "operator: from_step is a step (from 1) of the lesson from_lesson names")
		}
	}
	if (f["starter"] == nil) == (f["project"] == nil) {
		p.errorf(n, "operator: give starter (a bash script) or project (a Go project's folder), not both")
	}
	return o
}

// sameOperator checks that every action and check about the student's
// operator names the one the lesson runs.
func (p *parser) sameOperator(l *Lesson) {
	check := func(a Args, line int, what string) {
		name := a.Str("operator")
		switch {
		case name == "":
		case l.Operator == nil:
			p.errs = append(p.errs, &Error{File: p.file, Line: line, Msg: fmt.Sprintf(
				"%s: operator %s: the lesson runs no operator of the student's; add operator: {name: %s, starter: FILE}", what, name, name)})
		case style.Style(name) != l.Operator.Name:
			p.errs = append(p.errs, &Error{File: p.file, Line: line, Msg: fmt.Sprintf(
				"%s: operator %s: the lesson's operator is %s", what, name, l.Operator.Name)})
		}
	}
	for i, s := range l.Steps {
		if s.Action != nil {
			for j, op := range s.Action.Play {
				check(op.Args, op.Line, fmt.Sprintf("step %d: action: play %d: %s", i+1, j+1, op.Name))
			}
		}
		if s.Check != nil {
			for _, c := range s.Check.Conds {
				check(c.Args, c.Line, fmt.Sprintf("step %d: check: %s", i+1, c.Kind))
			}
		}
	}
}

func (p *parser) step(n *yaml.Node, what string) Step {
	s := Step{Line: n.Line, HintAfter: DefaultHintAfter}
	f := p.fields(n, what, []string{"title", "text"}, []string{"action", "check", "predict", "hint", "hint_after"})
	if f == nil {
		return s
	}
	if v := f["title"]; v != nil {
		s.Title = p.text(v, what+": title")
	}
	if v := f["text"]; v != nil {
		s.Text = p.text(v, what+": text")
	}
	if v := f["action"]; v != nil {
		s.Action = p.action(v, what+": action")
	}
	if v := f["check"]; v != nil {
		s.Check = p.check(v, what+": check")
	}
	if v := f["hint"]; v != nil {
		s.Hint = p.text(v, what+": hint")
	}
	if v := f["hint_after"]; v != nil {
		s.HintAfter = p.duration(v, what+": hint_after")
		if s.Hint == "" {
			p.errorf(v, "%s: hint_after without a hint", what)
		}
	}
	if s.Check != nil {
		s.Check.Gated = s.Gated()
	}
	if v := f["predict"]; v != nil {
		s.Predict = p.predict(v, what+": predict")
		switch {
		case f["check"] == nil:
			p.errorf(v, "%s: predict: a question needs a check on the same step, to measure the answer", what)
		case s.Check != nil && !s.Check.Gated:
			// Checked from the moment it is shown, it could pass before the
			// student has answered.
			p.errorf(v, "%s: predict: a question needs a check that waits for the student's act (an action whose play changes something)", what)
		}
	}
	if s.Check != nil && s.Hint == "" {
		p.errorf(n, "%s: a step with a check needs a hint for the student who is stuck", what)
	}
	return s
}

func (p *parser) action(n *yaml.Node, what string) *Action {
	f := p.fields(n, what, nil, []string{"kubectl", "key", "note", "answer", "play"})
	if f == nil {
		return nil
	}
	a := &Action{}
	if v := f["kubectl"]; v != nil {
		a.Kubectl = p.text(v, what+": kubectl")
		if a.Kubectl != "" && !strings.Contains(a.Kubectl, "kubectl") && !strings.Contains(a.Kubectl, "rlab do") {
			p.errorf(v, "%s: kubectl: the command to type must use kubectl or rlab do", what)
		}
	}
	if v := f["key"]; v != nil {
		a.Key = p.text(v, what+": key")
		if len([]rune(a.Key)) != 1 {
			p.errorf(v, "%s: key: want one key, got %q", what, a.Key)
		}
	}
	if v := f["note"]; v != nil {
		a.Note = p.text(v, what+": note")
	}
	if v := f["answer"]; v != nil {
		a.Answer = File{Name: p.text(v, what+": answer")}
		switch {
		case a.Kubectl == "" || a.Note == "":
			p.errorf(v, "%s: answer: the file the student writes needs a command that reads it (kubectl) and a note with its skeleton", what)
		case a.Answer.Name != path.Base(a.Answer.Name) || !strings.Contains(a.Kubectl, a.Answer.Name):
			p.errorf(v, "%s: answer: want a file of the lesson's folder that the command names, got %q", what, a.Answer.Name)
		}
	}
	if a.Kubectl == "" && a.Key == "" && a.Note == "" && len(p.errs) == 0 {
		p.errorf(n, "%s: tell the student what to do: kubectl, key or note", what)
	}
	if v := f["play"]; v != nil {
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			p.errorf(v, "%s: play: want a list of at least one sandbox action", what)
		} else {
			for i, o := range v.Content {
				if op, ok := p.op(o, fmt.Sprintf("%s: play %d", what, i+1)); ok {
					a.Play = append(a.Play, op)
				}
			}
		}
	}
	if v := f["kubectl"]; v != nil && len(p.errs) == 0 {
		p.doCommands(v, a, what)
	}
	return a
}

// doCommands checks the rlab do commands of a step's command line: each
// must be typed right, and do what one of the step's play entries does,
// so that by hand and autoplay do the same step.
func (p *parser) doCommands(n *yaml.Node, a *Action, what string) {
	cmds, err := DoCommands(a.Kubectl)
	if err != nil {
		p.errorf(n, "%s: kubectl: %v", what, err)
		return
	}
	for _, words := range cmds {
		typed := "rlab do " + strings.Join(words, " ")
		op, err := ParseVerb(words)
		if err != nil {
			p.errorf(n, "%s: kubectl: %s: %v", what, typed, err)
			continue
		}
		if !slices.ContainsFunc(a.Play, func(o Op) bool { return o.Name == op.Name && reflect.DeepEqual(o.Args, op.Args) }) {
			p.errorf(n, "%s: kubectl: %s (%s) is not what play does: play it too, or type what play does", what, typed, op.Describe())
		}
	}
}

// single reads a one-key mapping {name: {args}}, as used by play entries and
// check conditions.
func (p *parser) single(n *yaml.Node, what string) (string, *yaml.Node, bool) {
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		p.errorf(n, "%s: want one action as `name: {arguments}`, got %s", what, kindName(n))
		return "", nil, false
	}
	return n.Content[0].Value, n.Content[1], true
}

func (p *parser) op(n *yaml.Node, what string) (Op, bool) {
	name, argsN, ok := p.single(n, what)
	if !ok {
		return Op{}, false
	}
	act, ok := actions[name]
	if !ok {
		p.errorf(n, "%s: unknown action %q (want one of %s)", what, name, strings.Join(sortedKeys(actions), ", "))
		return Op{}, false
	}
	sp := act.args
	sp.orOperator = act.onOperator
	args := p.args(argsN, what+": "+name, sp, true)
	return Op{Name: name, Args: args, Line: n.Line}, args != nil
}

func (p *parser) check(n *yaml.Node, what string) *Check {
	c := &Check{Within: DefaultWithin, Line: n.Line}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s: want a mapping of conditions, got %s", what, kindName(n))
		return nil
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			p.errorf(k, "%s: %q given twice", what, k.Value)
			continue
		}
		seen[k.Value] = true
		switch k.Value {
		case "within":
			c.Within = p.duration(v, what+": within")
		case "hold":
			c.Hold = p.duration(v, what+": hold")
		default:
			kind, ok := checks[k.Value]
			if !ok {
				p.errorf(k, "%s: unknown check %q (want within, hold, or one of %s)", what, k.Value, strings.Join(sortedKeys(checks), ", "))
				continue
			}
			// A list gives the same check several times, e.g. API requests
			// of two styles with different bounds.
			items := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				items = v.Content
				if len(items) == 0 {
					p.errorf(v, "%s: %s: empty list", what, k.Value)
				}
			}
			sp := kind.args
			sp.orOperator = true
			for _, item := range items {
				if args := p.args(item, what+": "+k.Value, sp, false); args != nil {
					c.Conds = append(c.Conds, Cond{Kind: k.Value, Args: args, Line: item.Line})
				}
			}
		}
	}
	if len(c.Conds) == 0 && len(p.errs) == 0 {
		p.errorf(n, "%s: no condition to check", what)
	}
	if c.Hold > 0 && c.Hold >= c.Within {
		p.errorf(n, "%s: hold (%s) must be shorter than within (%s)", what, c.Hold, c.Within)
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
