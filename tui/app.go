package tui

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/sim/marks"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/startup"
)

// Messages the starter sends to the App while the sandbox comes up.
type (
	// PhaseMsg: a start-up phase ended.
	PhaseMsg startup.Phase
	// BuildLineMsg: a line of the control-plane build's output.
	BuildLineMsg string
	// NoteMsg: something worth saying during start-up.
	NoteMsg string
	// ReadyMsg: the sandbox is up; the main screen starts.
	ReadyMsg struct {
		Source  Source
		Actions Actions
		// Session is the lesson to follow (`rlab lesson start`); nil: none.
		Session Session
		// Info, if set, replaces Main.Info: what the cluster turned out to
		// be (kind's node image is chosen as it starts).
		Info *Info
	}
	// FailedMsg: start-up failed (everything started was stopped).
	FailedMsg struct{ Err error }
	// BehindFailedMsg: the start-up that went on behind the running screen
	// failed. The status line says so (the trace's rlab.startup); the App
	// keeps running until the user quits, and Err returns it then.
	BehindFailedMsg struct{ Err error }
	// StoppedMsg: the sandbox has stopped after a quit.
	StoppedMsg struct {
		Err  error
		Took time.Duration
	}
	// StopMsg asks the App to stop the sandbox and quit (q, a signal).
	StopMsg struct{}
)

type appState int

const (
	stateStarting appState = iota
	stateFailed
	stateRunning
	stateStopping
	stateDone
)

type appTick struct{}

// AppOptions configure the App.
type AppOptions struct {
	// Title of the start-up view.
	Title string
	// Words are the start-up view's words: the lesson's language (the
	// main screen takes its own from the Session); nil is English.
	Words lessonview.Words
	// Main is the main screen's options; Source, Actions and Session come
	// with ReadyMsg (Main.Session is kept if ReadyMsg has none), Quit is the
	// App's.
	Main Options
	// Cancel aborts a start-up under way.
	Cancel func()
	// Stop stops the sandbox; it runs in a Cmd once the user quits.
	Stop func() error
	// Screen, if set, draws the frames (only the lines that changed);
	// Bubble Tea is then given views of one blank cell.
	Screen *Screen
}

// App is `rlab up`: the start-up view, then the main screen, then the
// clean shutdown, shown.
type App struct {
	opts          AppOptions
	cancelActions context.CancelFunc
	state         appState
	startup       *startup.Model
	main          *Model
	styles        *common.Theme
	dark          bool
	w, h          int

	stopBegan   time.Time
	stopErr     error
	stopTook    time.Duration
	startErr    error
	interrupted bool
	// mainShown: the main screen's first frame was drawn (and marked).
	mainShown bool
}

// NewApp returns the App in its start-up state.
func NewApp(o AppOptions) *App {
	if o.Main.Now == nil {
		o.Main.Now = time.Now
	}
	if o.Main.Context == nil {
		o.Main.Context = context.Background()
	}
	// Actions get a context of their own, cancelled at quit so that none
	// runs on while the sandbox stops.
	actx, cancel := context.WithCancel(o.Main.Context)
	o.Main.Context = actx
	a := &App{opts: o, cancelActions: cancel, dark: o.Main.Dark, styles: common.NewTheme(o.Main.Dark)}
	a.startup = startup.New(o.Title, o.Main.Now())
	a.startup.Words = o.Words
	return a
}

// Done says the App has finished and may quit (signals are then let
// through); see Filter.
func (a *App) Done() bool { return a.state == stateDone }

// Err is the start-up error, if start-up failed (not by the user's quit).
func (a *App) Err() error {
	if a.interrupted {
		return nil
	}
	return a.startErr
}

// Interrupted says the user quit during start-up.
func (a *App) Interrupted() bool { return a.interrupted }

// StopErr is the error of stopping the sandbox, and how long it took.
func (a *App) StopErr() (error, time.Duration) { return a.stopErr, a.stopTook }

// Filter turns a signal's quit into a clean stop (tea.WithFilter).
func Filter(m tea.Model, msg tea.Msg) tea.Msg {
	a, ok := m.(*App)
	if !ok || a.Done() {
		return msg
	}
	switch msg.(type) {
	case tea.QuitMsg, tea.InterruptMsg:
		return StopMsg{}
	}
	return msg
}

func (a *App) tick() tea.Cmd {
	return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg { return appTick{} })
}

// Init starts the start-up clock.
func (a *App) Init() tea.Cmd { return tea.Batch(a.tick(), tea.RequestBackgroundColor) }

func (a *App) quit() tea.Cmd {
	a.state = stateDone
	return tea.Quit
}

func (a *App) stop() tea.Cmd {
	switch a.state {
	case stateStarting:
		a.state = stateStopping
		a.startup.Stopping = true
		a.stopBegan = a.opts.Main.Now()
		if a.opts.Cancel != nil {
			a.opts.Cancel()
		}
		return nil // FailedMsg follows once start-up has unwound
	case stateRunning:
		a.state = stateStopping
		a.stopBegan = a.opts.Main.Now()
		stop, main := a.opts.Stop, a.main
		a.cancelActions()
		return tea.Batch(a.tick(), func() tea.Msg {
			began := time.Now()
			if main != nil {
				main.WaitActions(5 * time.Second)
			}
			var err error
			if stop != nil {
				err = stop()
			}
			return StoppedMsg{Err: err, Took: time.Since(began)}
		})
	case stateFailed:
		return a.quit()
	}
	return nil
}

// Update handles one message.
func (a *App) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		a.w, a.h = msg.Width, msg.Height
	case tea.BackgroundColorMsg:
		a.dark = msg.IsDark()
		a.styles = common.NewTheme(a.dark)
	case tea.ColorProfileMsg:
		if a.opts.Screen != nil {
			a.opts.Screen.SetProfile(msg.Profile)
		}
	case appTick:
		if a.state == stateStarting || a.state == stateStopping {
			return a, a.tick()
		}
		return a, nil
	case StopMsg:
		return a, a.stop()
	case PhaseMsg, BuildLineMsg, NoteMsg, FailedMsg:
		return a, a.onStartUp(msg)
	case ReadyMsg:
		return a, a.onReady(msg)
	case BehindFailedMsg:
		// Once the user quit, the start-up ends by being stopped: that is
		// not its failure.
		if a.state == stateRunning {
			a.startErr = msg.Err
		}
		return a, nil
	case StoppedMsg:
		a.stopErr, a.stopTook = msg.Err, msg.Took
		return a, a.quit()
	case tea.KeyPressMsg:
		switch a.state {
		case stateFailed:
			return a, a.quit()
		case stateStarting:
			if s := msg.String(); s == "q" || s == "ctrl+c" {
				return a, a.stop()
			}
			return a, nil
		case stateStopping, stateDone:
			return a, nil
		}
	}
	if a.main != nil && a.state == stateRunning {
		_, cmd := a.main.Update(msg)
		return a, cmd
	}
	return a, nil
}

// onStartUp shows how start-up goes.
func (a *App) onStartUp(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case PhaseMsg:
		a.startup.AddPhase(startup.Phase(msg))
	case BuildLineMsg:
		a.startup.AddBuildLine(string(msg))
	case NoteMsg:
		a.startup.Notes = append(a.startup.Notes, string(msg))
	case FailedMsg:
		a.startErr = msg.Err
		if a.state == stateStopping {
			a.interrupted = true
			return a.quit() // the user asked to quit: nothing more to show
		}
		a.state = stateFailed
		a.startup.Fail(msg.Err, a.opts.Main.Now())
	}
	return nil
}

// onReady starts the main screen on the sandbox that came up.
func (a *App) onReady(msg ReadyMsg) tea.Cmd {
	if a.state == stateStopping {
		// Quit was pressed as start-up ended: stop what started.
		a.state = stateRunning
		a.main = nil
		return a.stop()
	}
	o := a.opts.Main
	o.Source, o.Actions = msg.Source, msg.Actions
	if msg.Session != nil {
		o.Session = msg.Session
	}
	if msg.Info != nil {
		o.Info = *msg.Info
	}
	o.Quit = func() tea.Cmd { return func() tea.Msg { return StopMsg{} } }
	o.Dark = a.dark
	a.main = New(o)
	a.state = stateRunning
	cmds := []tea.Cmd{a.main.Init()}
	if a.w > 0 {
		_, c := a.main.Update(tea.WindowSizeMsg{Width: a.w, Height: a.h})
		cmds = append(cmds, c)
	}
	return tea.Batch(cmds...)
}

// SetScreen has s draw the frames (see Screen).
func (a *App) SetScreen(s *Screen) { a.opts.Screen = s }

// View is the start-up view, the main screen, or the shutdown; drawn by
// the Screen if there is one.
func (a *App) View() tea.View {
	v := a.view()
	if a.opts.Screen == nil {
		// Bubble Tea's renderer writes it at its next frame.
		a.markMain(v)
		return v
	}
	a.opts.Screen.Draw(v.Content, v.Cursor, a.w, a.h)
	if a.opts.Screen.Showing() {
		a.markMain(v) // the frame is on the terminal: Draw wrote it
	}
	// A view of one blank cell: Bubble Tea's renderer draws it once and
	// then finds it unchanged (with no content at all it erases the
	// screen at every frame).
	return tea.View{Content: " ", AltScreen: v.AltScreen, WindowTitle: v.WindowTitle}
}

// markMain marks the first frame of the main screen (marks.ScreenMain):
// what `rlab bench` times `rlab up` to.
func (a *App) markMain(v tea.View) {
	if a.mainShown || a.state != stateRunning || a.main == nil || v.Content == "" {
		return
	}
	a.mainShown = true
	marks.Write(marks.ScreenMain)
}

func (a *App) view() tea.View {
	if a.state == stateRunning && a.main != nil {
		return a.main.View()
	}
	now := a.opts.Main.Now()
	var content string
	switch {
	case a.main != nil && (a.state == stateStopping || a.state == stateDone):
		content = a.stopping(now)
	default:
		content = a.startup.Render(now, a.w, a.h, a.styles)
	}
	v := tea.NewView(content)
	v.AltScreen = true
	v.WindowTitle = "rlab"
	return v
}

func (a *App) stopping(now time.Time) string {
	s := a.styles
	lines := []string{"", (&common.Line{}).Plain(" ").Add(s.Accent, "rlab").Add(s.Dim, " · ").Plain("stopping the sandbox").String(), ""}
	took := now.Sub(a.stopBegan)
	if a.state == stateDone {
		took = a.stopTook
	}
	l := &common.Line{}
	l.Plain("   operators, proxies, world observer, kwok, scheduler, controller-manager, apiserver, etcd … ").Add(s.Dim, common.Dur(took))
	lines = append(lines, l.String())
	return strings.Join(lines, "\n")
}
