package tui

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/internal/fixture"
)

// fakeSession is a Session whose state the test sets; it records the calls.
type fakeSession struct {
	mu      sync.Mutex
	st      lessonview.State
	lessons []lessonview.Entry
	calls   []string
	called  chan string // if set, every call is sent here too
	openErr func(n int) error
	// predictErr, if set, refuses an answer as the lesson engine would.
	predictErr func(n int) error
}

func (g *fakeSession) State() lessonview.State {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.st
}

func (g *fakeSession) record(c string) {
	g.mu.Lock()
	g.calls = append(g.calls, c)
	g.mu.Unlock()
	if g.called != nil {
		g.called <- c
	}
}

func (g *fakeSession) Next() { g.record("Next") }
func (g *fakeSession) Back() { g.record("Back") }
func (g *fakeSession) Play() { g.record("Play") }
func (g *fakeSession) Key() bool {
	g.record("Key")
	return true
}

// Predict keeps the answer on the state, a new version, as the engine does.
func (g *fakeSession) Predict(n int) error {
	// Recorded after the answer is kept: a test that waits for the call
	// and then changes the state must not have its change overwritten.
	defer g.record(fmt.Sprintf("Predict(%d)", n))
	if g.predictErr != nil {
		if err := g.predictErr(n); err != nil {
			return err
		}
	}
	g.set(func(s *lessonview.State) { s.Predicted = lessonview.Prediction{Choice: n} })
	return nil
}

func (g *fakeSession) Open(n int) error {
	g.record(fmt.Sprintf("Open(%d)", n))
	if g.openErr != nil {
		return g.openErr(n)
	}
	return nil
}

func (g *fakeSession) Lessons() []lessonview.Entry { return g.lessons }

func (g *fakeSession) Calls() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.calls...)
}

// set changes the state as the lesson engine would: a new version.
func (g *fakeSession) set(f func(*lessonview.State)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(&g.st)
	g.st.Version++
}

var courseLessons = []lessonview.Entry{
	{Number: 1, Title: "The reconcile loop", Steps: 4, Where: "4/4 by hand", Done: true},
	{Number: 2, Title: "Desired versus actual", Steps: 2, Where: "1/2, 1 played", Done: true},
	{Number: 3, Title: "ownerReferences and garbage collection", Steps: 5, Where: "step 2 of 5"},
	{Number: 4, Title: "Drift repair", Steps: 6, Where: ""},
	{Number: 5, Title: "Informers and the cache", Steps: 5, Where: ""},
	{Number: 6, Title: "The workqueue", Steps: 5, Where: ""},
	{Number: 7, Title: "Status and conflicts", Steps: 3, Where: ""},
	{Number: 8, Title: "Leader election", Steps: 6, Where: ""},
	{Number: 10, Title: "RBAC", Steps: 4, Where: ""},
}

// waitingStep is lesson 4, step 2: a key, a kubectl loop of three lines
// (one wider than a narrow panel), the check waiting.
func waitingStep() lessonview.State {
	return lessonview.State{
		Version: 1, Lesson: 4, Count: 9, Title: "Drift repair",
		Step: 1, Steps: 6, StepTitle: "Scale it by hand",
		Text: `The Deployment belongs to the operator, not to you. Scale it by hand
to 5 replicas and watch each style put it back to what the Echo says:
the watchers within milliseconds, the shell loop at its next poll.`,
		Kubectl: `for s in shell clientgo runtime; do
  kubectl -n echo-$s scale deployment echo-hello --replicas=5 && kubectl -n echo-$s get deployment echo-hello -o wide
done
`,
		Key:     "s",
		Waiting: "every style: the operator repairs the drift of Deployment echo-hello\nevery style: Deployment echo-hello asks for 2 replicas",
		Detail:  "still missing: shell (Deployment echo-hello has 5 replicas, the Echo asks for 2)",
	}
}

// asking puts lesson 4's question on the step; answer is the right choice
// (0: the measurement decides).
func asking(answer int) func(*lessonview.State) {
	return func(s *lessonview.State) {
		s.Predict = &lessonview.Predict{
			Question: "Which style repairs the Deployment first?",
			Choices:  []string{"the shell loop", "client-go", "controller-runtime", "all at once"},
			Answer:   answer,
		}
	}
}

// passedSaying is the step passed with the student's choice measured.
func passedSaying(answer, choice int) func(*lessonview.State) {
	return func(s *lessonview.State) {
		asking(answer)(s)
		s.Passed = true
		s.Detail = "drift_repaired: shell replicas repaired in 4.40s, clientgo replicas repaired in 0.02s, runtime replicas repaired in 0.02s"
		s.Predicted = s.Predict.Measure(lessonview.Prediction{Choice: choice}, s.Detail)
	}
}

func newLessonModel(t testing.TB, g Session, a Actions) *Model {
	t.Helper()
	m, _ := newScreen(t, func(o *Options) { o.Actions, o.Session = a, g })
	return m
}

// lessonPress sends keys by Update; an action's Cmd is run and its result
// fed back, as the program would.
func lessonPress(m *Model, keys ...string) {
	for _, k := range keys {
		_, cmd := m.Update(keyMsg(k))
		if cmd == nil {
			continue
		}
		if msg, ok := cmd().(actionMsg); ok {
			m.Update(msg)
		}
	}
}

// checkSize fails unless out is exactly w×h.
func checkSize(t *testing.T, out string, w, h int) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != h {
		t.Errorf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw != w {
			t.Errorf("line %d is %d wide, want %d: %q", i, lw, w, ansi.Strip(l))
		}
	}
}

// TestTUILessonGolden renders the screen with a lesson in each state at
// each size, ANSI stripped; refresh with
// `go test ./tui -run TestTUILessonGolden -update`.
func TestTUILessonGolden(t *testing.T) {
	states := []struct {
		name string
		edit func(*lessonview.State)
		keys []string
		g    func(*fakeSession)
	}{
		{name: "waiting"},
		{name: "passed", edit: func(s *lessonview.State) {
			s.Passed = true
			s.Detail = "repaired: shell in 4.1s, client-go in 21ms, controller-runtime in 18ms"
		}},
		{name: "hint", edit: func(s *lessonview.State) {
			s.Hint = "Press s on the screen and accept 3, or run the loop above.\nThe shell loop may take a whole poll interval before it even looks."
		}},
		{name: "playing", edit: func(s *lessonview.State) { s.Playing = true }},
		{name: "play-error", edit: func(s *lessonview.State) {
			s.PlayErr = `scale_deployment: deployments.apps "echo-hello" is forbidden: User "rlab" cannot patch resource "deployments/scale" in API group "apps" in the namespace "echo-shell"`
		}},
		{name: "done", edit: func(s *lessonview.State) {
			s.Step, s.Done, s.Passed = 5, true, true
			s.StepTitle = "Delete the Echo"
			s.Detail = "seen: Echo/hello gone in all styles"
		}},
		{name: "list", keys: []string{"l"}},
		{name: "predict", edit: asking(0)},
		{name: "predict-passed", edit: passedSaying(0, 1)},
	}
	sizes := []struct{ w, h int }{{100, 30}, {120, 40}, {160, 45}, {200, 60}}
	for _, st := range states {
		for _, sz := range sizes {
			t.Run(fmt.Sprintf("%s-%dx%d", st.name, sz.w, sz.h), func(t *testing.T) {
				g := &fakeSession{st: waitingStep(), lessons: courseLessons}
				if st.edit != nil {
					g.set(st.edit)
				}
				m := newLessonModel(t, g, &fixture.Actions{})
				m.Update(tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
				lessonPress(m, st.keys...)
				out := m.View().Content
				checkSize(t, out, sz.w, sz.h)
				golden.RequireEqual(t, ansi.Strip(out)+"\n")
			})
		}
	}
}

// TestTUILessonScreens: the lesson screen in states the size matrix above
// does not cover.
func TestTUILessonScreens(t *testing.T) {
	tests := []struct {
		name string
		w, h int
		edit func(*lessonview.State)
		keys []string
		g    func(*fakeSession)
	}{
		// Wide and short: the panel would be cut under the timeline.
		{name: "beside-200x35", w: 200, h: 35},
		{name: "nothing-to-check", w: 120, h: 40, edit: func(s *lessonview.State) {
			s.Kubectl, s.Key, s.Waiting, s.Detail = "", "", "", ""
			s.Note = "Look at the three panes: the shell loop has not even noticed yet."
		}},
		{name: "help", w: 160, h: 45, keys: []string{"?"}},
		{name: "status-and-lesson-line", w: 100, h: 30, keys: []string{"c"}},
		{name: "list-open-error", w: 120, h: 40, keys: []string{"l", "4", "2", "enter"}, g: func(g *fakeSession) {
			g.openErr = func(n int) error { return fmt.Errorf("no lesson %d: there are 9", n) }
		}},
		{name: "list-scrolled", w: 100, h: 30, keys: []string{"l", "down", "down", "down", "down"}},
		{name: "predict-prompt", w: 120, h: 40, edit: asking(0), keys: []string{"y", "2"}},
		{name: "predict-answered", w: 120, h: 40, edit: asking(0), keys: []string{"y", "2", "enter"}},
		{name: "predict-wrong-number", w: 120, h: 40, edit: asking(0), keys: []string{"y", "7", "enter"}},
		{name: "predict-right", w: 120, h: 40, edit: passedSaying(3, 3)},
		{name: "predict-not-quite", w: 100, h: 30, edit: passedSaying(3, 1)},
		// Choices too wide for one line go one a line.
		{name: "predict-narrow-choices", w: 100, h: 40, edit: func(s *lessonview.State) {
			asking(0)(s)
			s.Predict.Choices = []string{"the shell loop, at its next poll", "client-go, within milliseconds", "controller-runtime, within milliseconds", "all three at the same instant", "nobody: the edit sticks"}
		}},
		{name: "predict-done", w: 120, h: 40, edit: func(s *lessonview.State) {
			passedSaying(3, 2)(s)
			s.Step, s.Done = 5, true
		}},
		// The screen's own words in the course's other languages (the
		// lesson's text is the fake's, in English): every line still fits,
		// Chinese at two columns a character.
		{name: "vi-help", w: 160, h: 45, edit: inLang("vi", nil), keys: []string{"?"}},
		{name: "zh-help", w: 160, h: 45, edit: inLang("zh", nil), keys: []string{"?"}},
		{name: "ru-help", w: 160, h: 45, edit: inLang("ru", nil), keys: []string{"?"}},
		{name: "zh-waiting", w: 100, h: 30, edit: inLang("zh", nil)},
		{name: "vi-predict-not-quite", w: 100, h: 30, edit: inLang("vi", passedSaying(3, 1))},
		{name: "ru-list", w: 120, h: 40, edit: inLang("ru", nil), keys: []string{"l"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &fakeSession{st: waitingStep(), lessons: courseLessons}
			if tt.edit != nil {
				g.set(tt.edit)
			}
			if tt.g != nil {
				tt.g(g)
			}
			m := newLessonModel(t, g, &fixture.Actions{})
			m.Update(tea.WindowSizeMsg{Width: tt.w, Height: tt.h})
			lessonPress(m, tt.keys...)
			out := m.View().Content
			checkSize(t, out, tt.w, tt.h)
			golden.RequireEqual(t, ansi.Strip(out)+"\n")
		})
	}
}

// TestTUILessonKeys drives the screen with keys by Update: each lesson key
// calls the Session, and creating the Echo moves from n to c in a lesson.
func TestTUILessonKeys(t *testing.T) {
	createEcho := fixture.C("CreateEcho", "hello", "hello from rlab", 2)
	tests := []struct {
		name      string
		noSession bool
		keys      []string
		calls     []string       // on the Session
		actions   []fixture.Call // on the Actions
		list      bool           // the list is open afterwards
		text      string         // on screen afterwards
	}{
		{name: "n next", keys: []string{"n"}, calls: []string{"Next"}},
		{name: "b back", keys: []string{"b"}, calls: []string{"Back"}},
		{name: "a play", keys: []string{"a"}, calls: []string{"Play"}},
		{name: "c creates the Echo", keys: []string{"c"}, actions: []fixture.Call{createEcho}, text: "✓ created Echo/hello"},
		{name: "the step's key does the step, whatever pane is focused", keys: []string{"tab", "s"}, calls: []string{"Key"}},
		{name: "the step's key in the list does not act", keys: []string{"l", "s"}, list: true},
		{name: "l opens the list", keys: []string{"l"}, list: true, text: "open lesson:"},
		{name: "l 3 enter opens lesson 3", keys: []string{"l", "3", "enter"}, calls: []string{"Open(3)"}},
		{name: "l 1 0 enter opens lesson 10", keys: []string{"l", "1", "0", "enter"}, calls: []string{"Open(10)"}},
		{name: "l down enter opens the next lesson", keys: []string{"l", "down", "enter"}, calls: []string{"Open(5)"}},
		{name: "l up up enter", keys: []string{"l", "up", "up", "enter"}, calls: []string{"Open(2)"}},
		{name: "l enter opens the lesson followed", keys: []string{"l", "enter"}, calls: []string{"Open(4)"}},
		{name: "l esc closes", keys: []string{"l", "3", "esc"}, text: "waiting for:"},
		{name: "l l closes", keys: []string{"l", "l"}, text: "waiting for:"},
		{name: "keys in the list do not act", keys: []string{"l", "n", "a", "b", "c", "d"}, list: true},
		{name: "open error shown, list kept", keys: []string{"l", "4", "2", "enter"}, calls: []string{"Open(42)"}, list: true, text: "✗ no lesson 42"},
		{name: "n without a lesson creates the Echo", noSession: true, keys: []string{"n"}, actions: []fixture.Call{createEcho}, text: "✓ created Echo/hello"},
		{name: "lesson keys do nothing without a lesson", noSession: true, keys: []string{"b", "a", "l", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &fakeSession{st: waitingStep(), lessons: courseLessons, openErr: func(n int) error {
				if n == 42 {
					return errors.New("no lesson 42: the course has 9")
				}
				return nil
			}}
			a := &fixture.Actions{}
			var m *Model
			if tt.noSession {
				m, _ = newModel(t, a)
			} else {
				m = newLessonModel(t, g, a)
			}
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			lessonPress(m, tt.keys...)
			if got := g.Calls(); !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("Session calls = %q, want %q", got, tt.calls)
			}
			if got := a.Calls(); !reflect.DeepEqual(got, tt.actions) {
				t.Errorf("actions = %v, want %v", got, tt.actions)
			}
			if m.lesson.listOpen != tt.list {
				t.Errorf("list open = %v, want %v", m.lesson.listOpen, tt.list)
			}
			if out := ansi.Strip(m.View().Content); !strings.Contains(out, tt.text) {
				t.Errorf("screen does not say %q:\n%s", tt.text, out)
			}
		})
	}
}

// TestTUILessonHelpLine: in a lesson the short help names the lesson keys
// and c for the Echo; without one it is as before.
func TestTUILessonHelpLine(t *testing.T) {
	m := newLessonModel(t, &fakeSession{st: waitingStep()}, nil)
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	lines := strings.Split(ansi.Strip(m.View().Content), "\n")
	help := lines[len(lines)-1]
	for _, want := range []string{"n next step", "b back", "a play step", "l lessons", "c create Echo again"} {
		if !strings.Contains(help, want) {
			t.Errorf("help line %q lacks %q", help, want)
		}
	}
	if lesson := lines[len(lines)-2]; !strings.HasPrefix(lesson, " lesson 4/9 · Drift repair · step 2 of 6: Scale it by hand") ||
		!strings.HasSuffix(strings.TrimRight(lesson, " "), "n next step · b back · a play step · l lessons") {
		t.Errorf("lesson line = %q", lesson)
	}
	m, _ = newModel(t, nil)
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	lines = strings.Split(ansi.Strip(m.View().Content), "\n")
	if help := lines[len(lines)-1]; strings.Contains(help, "next step") || !strings.Contains(help, "n create Echo again") {
		t.Errorf("help line without a lesson = %q", help)
	}
}

// TestTUILessonRedraw: the frame reads the Session's state and draws it when
// its version changed, and only then.
func TestTUILessonRedraw(t *testing.T) {
	g := &fakeSession{st: waitingStep()}
	m := newLessonModel(t, g, nil)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	m.Update(FrameMsg{})
	if got := m.View().Content; !strings.Contains(got, "still missing: shell") {
		t.Fatalf("no detail on screen:\n%s", ansi.Strip(got))
	}
	m.draw.cache = "cached" // a redraw would replace it
	m.Update(FrameMsg{})
	if got := m.View().Content; got != "cached" {
		t.Fatal("a frame with the same lesson state redrew")
	}
	// The same version says nothing changed, whatever the fields hold.
	g.mu.Lock()
	g.st.Detail = "unseen"
	g.mu.Unlock()
	m.Update(FrameMsg{})
	if got := m.View().Content; got != "cached" {
		t.Fatal("a frame redrew with the version unchanged")
	}
	g.set(func(s *lessonview.State) { s.Passed, s.Detail = true, "repaired in all three styles" })
	m.Update(FrameMsg{})
	got := ansi.Strip(m.View().Content)
	if !strings.Contains(got, "✓ passed — n for the next step: every style: the operator repairs") || !strings.Contains(got, "repaired in all three styles") {
		t.Fatalf("the new state was not drawn on the next frame:\n%s", got)
	}
}

// TestTUILessonProgram: in the running program, the lesson keys reach the
// Session and a state the Session changes on its own shows on the screen.
func TestTUILessonProgram(t *testing.T) {
	g := &fakeSession{st: waitingStep(), lessons: courseLessons, called: make(chan string, 8)}
	m := newLessonModel(t, g, &fixture.Actions{})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 45))
	for _, k := range []string{"n", "b", "a"} {
		tm.Send(keyMsg(k))
		select {
		case c := <-g.called:
			if want := map[string]string{"n": "Next", "b": "Back", "a": "Play"}[k]; c != want {
				t.Fatalf("%s called %s, want %s", k, c, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s called nothing", k)
		}
	}
	g.set(func(s *lessonview.State) { s.Step, s.StepTitle = 2, "Now the shell loop alone" })
	// The renderer rewrites only the cells that changed: "step " stays.
	appWaitFor(t, tm, "3 of 6: Now the shell loop alone")
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}

// TestTUIAppLesson: the Session that comes with ReadyMsg reaches the screen.
func TestTUIAppLesson(t *testing.T) {
	a := NewApp(AppOptions{Title: "starting the sandbox", Main: Options{Frame: 10 * time.Millisecond}})
	tm := teatest.NewTestModel(t, a, teatest.WithInitialTermSize(160, 45))
	g := &fakeSession{st: waitingStep(), called: make(chan string, 1)}
	tm.Send(ReadyMsg{Source: fixture.NewSource(fixture.Snapshot()), Actions: &fixture.Actions{}, Session: g})
	appWaitFor(t, tm, "lesson 4/9 · Drift repair · step 2 of 6", "waiting for:")
	tm.Send(keyMsg("n"))
	select {
	case c := <-g.called:
		if c != "Next" {
			t.Fatalf("n called %s", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("n did not reach the Session")
	}
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}

// TestTUILessonInputCursor: in a lesson the input sits above the lesson
// line, and the terminal's cursor with it.
func TestTUILessonInputCursor(t *testing.T) {
	for _, guide := range []bool{false, true} {
		var m *Model
		if guide {
			m = newLessonModel(t, &fakeSession{st: waitingStep()}, &fixture.Actions{})
		} else {
			m, _ = newModel(t, &fixture.Actions{})
		}
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		// The input draws its own cursor by default; the real one is what
		// View places.
		m.ctl.input.SetVirtualCursor(false)
		m.Update(keyMsg("e"))
		v := m.View()
		if v.Cursor == nil {
			t.Fatalf("guide %v: no cursor", guide)
		}
		lines := strings.Split(ansi.Strip(v.Content), "\n")
		if y := v.Cursor.Position.Y; y < 0 || y >= len(lines) || !strings.HasPrefix(lines[y], " message: ") {
			t.Fatalf("guide %v: cursor on row %d, not on the input:\n%s", guide, y, strings.Join(lines[len(lines)-4:], "\n"))
		}
	}
}

// TestTUILessonNoEcho: the header names the key that creates the Echo, c
// in a lesson.
func TestTUILessonNoEcho(t *testing.T) {
	m := newLessonModel(t, &fakeSession{st: waitingStep()}, nil)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	m.SetSnapshot(world.Snapshot{})
	if got := ansi.Strip(m.Render()); !strings.Contains(strings.SplitN(got, "\n", 2)[0], "not found (c creates it)") {
		t.Fatalf("header: %s", strings.SplitN(got, "\n", 2)[0])
	}
}

// TestTUILessonPredict: y opens the prompt that answers the step's
// question; a number and enter give it to the Session; digits typed there do
// not focus panes, and the step's key does not act; what cannot be answered
// is said, on the status line or under the prompt.
func TestTUILessonPredict(t *testing.T) {
	tests := []struct {
		name       string
		noSession  bool
		edit       func(*lessonview.State)
		predictErr error
		keys       []string
		calls      []string
		prompt     bool   // open afterwards
		value      string // in the prompt, if open
		text       string // on screen afterwards
	}{
		{name: "y opens the prompt", edit: asking(0), keys: []string{"y"}, prompt: true, text: "your prediction, 1 to 4:"},
		{name: "y 2 enter answers", edit: asking(0), keys: []string{"y", "2", "enter"}, calls: []string{"Predict(2)"},
			text: "✓ you said: client-go — now act"},
		{name: "the answer shows on the panel", edit: asking(0), keys: []string{"y", "3", "enter"}, calls: []string{"Predict(3)"},
			text: "you said: controller-runtime (y changes it)"},
		{name: "y again holds the answer given", edit: func(s *lessonview.State) {
			asking(0)(s)
			s.Predicted = lessonview.Prediction{Choice: 4}
		}, keys: []string{"y"}, prompt: true, value: "4"},
		{name: "a number out of range stays under the prompt", edit: asking(0), keys: []string{"y", "7", "enter"}, prompt: true, value: "7",
			text: "✗ answer with a number from 1 to 4"},
		{name: "not a number", edit: asking(0), keys: []string{"y", "x", "enter"}, prompt: true, text: `✗ "x" is not the number of a choice`},
		{name: "the Session's refusal stays under the prompt", edit: asking(0), predictErr: errors.New("the step is playing: a prediction comes before the act"),
			keys: []string{"y", "1", "enter"}, calls: []string{"Predict(1)"}, prompt: true, text: "✗ the step is playing"},
		{name: "esc cancels", edit: asking(0), keys: []string{"y", "2", "esc"}, text: "(y: your prediction, before you act)"},
		{name: "the step's key in the prompt does not act", edit: asking(0), keys: []string{"y", "s"}, prompt: true, value: "s"},
		{name: "no question", keys: []string{"y"}, text: "✗ this step asks no question"},
		{name: "passed", edit: passedSaying(0, 0), keys: []string{"y"}, text: "✗ the step passed already"},
		{name: "y does nothing without a lesson", noSession: true, keys: []string{"y"}},
		// A lesson in another language asks in it (lessonview.Formats).
		{name: "the prompt in Vietnamese", edit: inLang("vi", asking(0)), keys: []string{"y"}, prompt: true, text: "dự đoán của bạn, từ 1 đến 4:"},
		{name: "the answer in Russian", edit: inLang("ru", asking(0)), keys: []string{"y", "2", "enter"}, calls: []string{"Predict(2)"},
			text: "✓ ваш ответ: client-go — теперь действуйте"},
		{name: "out of range in Chinese", edit: inLang("zh", asking(0)), keys: []string{"y", "7", "enter"}, prompt: true, value: "7",
			text: "✗ " + lessonview.WordsFor("zh").F("answer with a number from 1 to %d", 4)},
		{name: "no question in Chinese", edit: inLang("zh", nil), keys: []string{"y"}, text: "✗ 这一步没有问题"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &fakeSession{st: waitingStep(), lessons: courseLessons, predictErr: func(int) error { return tt.predictErr }}
			if tt.edit != nil {
				g.set(tt.edit)
			}
			var m *Model
			if tt.noSession {
				m, _ = newModel(t, &fixture.Actions{})
			} else {
				m = newLessonModel(t, g, &fixture.Actions{})
			}
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			focused := m.Focused()
			lessonPress(m, tt.keys...)
			if got := g.Calls(); !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("Session calls = %q, want %q", got, tt.calls)
			}
			if open := m.ctl.mode == modePredict; open != tt.prompt {
				t.Errorf("prompt open = %v, want %v (mode %d)", open, tt.prompt, m.ctl.mode)
			}
			if tt.prompt && tt.value != "" && m.ctl.input.Value() != tt.value {
				t.Errorf("prompt holds %q, want %q", m.ctl.input.Value(), tt.value)
			}
			if m.Focused() != focused {
				t.Errorf("focus moved from %s to %s", focused, m.Focused())
			}
			if out := ansi.Strip(m.View().Content); !strings.Contains(out, tt.text) {
				t.Errorf("screen does not say %q:\n%s", tt.text, out)
			}
		})
	}
}

// TestTUILessonPredictLine: the lesson line names y while there is a
// question to answer, and only then.
func TestTUILessonPredictLine(t *testing.T) {
	tests := []struct {
		name string
		edit func(*lessonview.State)
		y    bool
	}{
		{"no question", nil, false},
		{"a question", asking(0), true},
		{"answered", func(s *lessonview.State) { asking(0)(s); s.Predicted.Choice = 2 }, true},
		{"passed", passedSaying(3, 2), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &fakeSession{st: waitingStep()}
			if tt.edit != nil {
				g.set(tt.edit)
			}
			m := newLessonModel(t, g, nil)
			m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
			lines := strings.Split(ansi.Strip(m.View().Content), "\n")
			if line := strings.TrimRight(lines[len(lines)-2], " "); strings.HasSuffix(line, "l lessons · y predict") != tt.y {
				t.Errorf("lesson line = %q, want y predict: %v", line, tt.y)
			}
		})
	}
}

// TestTUILessonPredictProgram: in the running program, y 2 enter reaches
// the Session, and the pass the Session reports shows the answer beside what
// was measured.
func TestTUILessonPredictProgram(t *testing.T) {
	g := &fakeSession{st: waitingStep(), lessons: courseLessons, called: make(chan string, 8)}
	g.set(asking(3))
	m := newLessonModel(t, g, &fixture.Actions{})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 45))
	for _, k := range []string{"y", "2", "enter"} {
		tm.Send(keyMsg(k))
	}
	select {
	case c := <-g.called:
		if c != "Predict(2)" {
			t.Fatalf("y 2 enter called %s", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("y 2 enter called nothing")
	}
	g.set(func(s *lessonview.State) {
		s.Passed, s.Detail = true, "drift_repaired: clientgo replicas repaired in 0.02s"
		s.Predicted = s.Predict.Measure(s.Predicted, s.Detail)
	})
	appWaitFor(t, tm, "not quite: the answer is controller-runtime", "you said: client-go · measured: drift_repaired: clientgo")
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}

// inLang is edit (if any), then the screen's words in lang.
func inLang(lang string, edit func(*lessonview.State)) func(*lessonview.State) {
	return func(s *lessonview.State) {
		if edit != nil {
			edit(s)
		}
		s.Words = lessonview.WordsFor(lang)
	}
}

// TestTUILessonPromptsInLanguage: in a lesson in another language, the
// screen's action prompts and their help are in it (lessonview.Formats).
func TestTUILessonPromptsInLanguage(t *testing.T) {
	tests := []struct {
		lang, key string
		want      []string
	}{
		{"vi", "e", []string{" thông điệp: ", "enter để áp dụng · esc để hủy"}},
		{"ru", "e", []string{" сообщение: ", "enter применяет · esc отменяет"}},
		{"zh", "e", []string{" 消息： ", "enter 应用 · esc 取消"}},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			st := waitingStep()
			st.Words = lessonview.WordsFor(tt.lang)
			m := newLessonModel(t, &fakeSession{st: st}, &fixture.Actions{})
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			m.Update(keyMsg(tt.key))
			screen := ansi.Strip(m.Render())
			for _, w := range tt.want {
				if !strings.Contains(screen, w) {
					t.Errorf("no %q on the screen:\n%s", w, screen)
				}
			}
		})
	}
}

// TestTUITooSmallInLanguage: in a lesson in another language, the screen
// that asks for a larger terminal is in it; without one, in English.
func TestTUITooSmallInLanguage(t *testing.T) {
	tests := []struct {
		lang string
		w, h int
		want []string
	}{
		{"zh", 99, 30, []string{"rlab 需要至少 100x30 的终端；当前终端为 99x30。", "请放大终端（或调小字体）。", "q 退出。"}},
		{"ru", 120, 29, []string{"Для rlab нужен терминал не меньше 100x30; текущий — 120x29.", "Увеличьте окно терминала (или уменьшите шрифт).", "q — выход."}},
		{"vi", 80, 24, []string{"rlab cần terminal ít nhất 100x30; terminal này là 80x24.", "Hãy phóng to terminal (hoặc giảm cỡ chữ).", "q để thoát."}},
		{"", 99, 30, []string{"rlab needs a terminal of at least 100x30; this one is 99x30.", "Enlarge the terminal (or make the font smaller).", "q quits."}},
	}
	for _, tt := range tests {
		t.Run(cmp.Or(tt.lang, "no lesson"), func(t *testing.T) {
			var m *Model
			if tt.lang == "" {
				m, _ = newModel(t, &fixture.Actions{})
			} else {
				st := waitingStep()
				st.Words = lessonview.WordsFor(tt.lang)
				m = newLessonModel(t, &fakeSession{st: st}, &fixture.Actions{})
			}
			m.Update(tea.WindowSizeMsg{Width: tt.w, Height: tt.h})
			screen := ansi.Strip(m.Render())
			for _, w := range tt.want {
				if !strings.Contains(screen, w) {
					t.Errorf("no %q on the screen:\n%s", w, screen)
				}
			}
			for _, en := range []string{"needs a terminal", "Enlarge", "quits"} {
				if tt.lang != "" && strings.Contains(screen, en) {
					t.Errorf("English %q left on the screen:\n%s", en, screen)
				}
			}
		})
	}
}
