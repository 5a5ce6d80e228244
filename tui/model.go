package tui

import (
	"context"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/stats"
)

// Defaults of Options.
const (
	DefaultFrame   = 33 * time.Millisecond // ~30 frames a second at most
	DefaultBudget  = 10 * time.Millisecond // ingest work per Update
	DefaultEcho    = "hello"
	DefaultMessage = "hello from rlab"
	DefaultTimeout = 15 * time.Second
	// SubSize is the screen's subscription ring. Sub.Drain copies it whole
	// under its lock: a larger ring makes one frame's drain (and its garbage)
	// long enough to hold a key press up in a burst; 16k events per frame
	// is still 490k events/s at 30 Hz, and what overflows is counted and
	// shown as dropped.
	SubSize    = 1 << 14
	maxBacklog = 1 << 17
	// idleWake: with nothing on the bus and nothing to redraw, the pump
	// still comes once this often (the clock, countdowns, the world's
	// Lease). An event wakes it at once.
	idleWake = time.Second
)

// Minimum terminal size.
const (
	MinWidth  = 100
	MinHeight = 30
	threeFrom = 120 // three panes side by side from this width
)

// Options configure a Model.
type Options struct {
	Source  Source
	Actions Actions // nil: no cluster (a replay); action keys say so
	Info    Info
	Styles  []style.Style // panes, in order; every style (style.All) if empty
	Echo    string        // the Echo shown and acted on; DefaultEcho if empty

	// Frame is the pump interval: the bus is drained once per frame.
	Frame time.Duration
	// Budget bounds the ingest work of one Update, so that a burst of
	// events never keeps a key press waiting.
	Budget time.Duration
	// Now is the clock (a replay's virtual clock); time.Now if nil.
	Now func() time.Time
	// Start is when elapsed time counts from; Now() at New if zero.
	Start time.Time
	// Context bounds the actions; Background if nil.
	Context context.Context
	// Quit is what `q` does; tea.Quit if nil.
	Quit func() tea.Cmd
	// TimelineSize is how many events the timeline keeps.
	TimelineSize int
	// Dark is the initial background guess until the terminal answers.
	Dark bool
	// Extra, if set, is shown in the header before the clock (a replay's
	// position and speed).
	Extra func() string
	// Hint is shown on the status line when there is nothing else to say.
	Hint string
	// Session is the lesson followed (`rlab lesson start`): the screen shows
	// the lesson panel and the lesson keys drive it. nil: no lesson.
	Session Session
}

func (o Options) withDefaults() Options {
	if o.Echo == "" {
		o.Echo = DefaultEcho
	}
	if o.Frame <= 0 {
		o.Frame = DefaultFrame
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Start.IsZero() {
		o.Start = o.Now()
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.Quit == nil {
		o.Quit = func() tea.Cmd { return tea.Quit }
	}
	return o
}

// FrameMsg is the pump's tick: drain the bus, fold, maybe redraw.
type FrameMsg struct{}

// Model is the main screen. Each part owns its state and its keys: the
// feed (events and world), the panes, the controls (action keys, prompts,
// status line) and the lesson. Model routes messages to them and draws
// the screen from them. It is used through a pointer: View keeps a cache,
// redrawn only when something changed.
type Model struct {
	opts     Options
	keys     common.KeyMap
	help     help.Model
	styles   *common.Theme
	w, h     int
	showHelp bool

	feed   *feed
	panes  *panes
	ctl    *controls
	lesson *lesson
	logs   *logView

	draw redraw
	plan pumpPlan // when the next frame comes, as last decided
	// wall is the wall clock that spaces redraws and world snapshots
	// (Options.Now may be a replay's virtual clock); tests simulate it.
	wall func() time.Time
}

// pumpPlan is when the next frame comes: after a delay, or at the first
// event on the bus if that comes sooner.
type pumpPlan struct {
	after time.Duration
	onBus bool
}

// New returns the main screen model.
func New(opts Options) *Model {
	opts = opts.withDefaults()
	order := style.All()
	if len(opts.Styles) > 0 {
		order = opts.Styles
	}
	m := &Model{
		opts:   opts,
		keys:   common.DefaultKeyMap().Panes(len(order)),
		help:   help.New(),
		feed:   newFeed(opts, order),
		panes:  &panes{order: order},
		ctl:    newControls(opts),
		lesson: newLesson(opts.Session),
		logs:   newLogView(opts.Source),
		wall:   time.Now,
	}
	m.feed.wall = func() time.Time { return m.wall() }
	if m.lesson.on() {
		m.keys = m.keys.Lesson().In(m.lesson.st.Words)
		m.ctl.words = m.lesson.st.Words
		m.feed.tl.Words = m.lesson.st.Words
	}
	m.setDark(opts.Dark)
	return m
}

func (m *Model) setDark(dark bool) {
	m.styles = common.NewTheme(dark)
	m.help.Styles = help.DefaultStyles(dark)
	m.ctl.setDark(dark)
	m.draw.now()
}

func (m *Model) frame() tea.Cmd {
	return tea.Tick(m.opts.Frame, func(time.Time) tea.Msg { return FrameMsg{} })
}

// Init starts the frame pump and asks the terminal for its background.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.frame(), tea.RequestBackgroundColor)
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case FrameMsg:
		return m, m.onFrame()
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.draw.now()
	case tea.BackgroundColorMsg:
		m.setDark(msg.IsDark())
	case actionMsg:
		m.ctl.done(msg)
		m.draw.now()
	case logReadMsg:
		cmd, changed := m.logs.onRead(msg)
		if changed {
			m.draw.now()
		}
		return m, cmd
	case logTickMsg:
		return m, m.logs.onTick(msg)
	case tea.KeyPressMsg:
		m.draw.now()
		return m, m.onKey(msg)
	case tea.PasteMsg:
		if m.ctl.inputOpen() {
			m.draw.now()
			return m, m.ctl.paste(msg)
		}
	}
	return m, nil
}

// onFrame drains the bus once, folds what it can within the budget, looks
// at the world if it changed, and re-arms the pump: at once if events are
// still waiting; else at the next event on the bus, or when the screen
// must be drawn again by itself (a redraw held back, the clock), whichever
// comes first. At rest that is once a second.
func (m *Model) onFrame() tea.Cmd {
	now := m.opts.Now()
	if m.feed.pull() {
		m.draw.dirty = true
	}
	m.ctl.remember(m.echoView()) // its spec, to create it again after x
	if m.lesson.poll() {
		m.draw.now()
	}
	// Things that move with time (countdowns, the marker, flashes) are
	// redrawn ten times a second while something moves, else once a second.
	flashing, moving := m.feed.animating(now)
	m.draw.tick(now, flashing, moving)
	if len(m.feed.backlog) > 0 {
		return m.schedule(pumpPlan{})
	}
	wall := m.wall()
	after := m.draw.due(now, wall)
	if m.feed.snapWait {
		after = min(after, m.feed.snapNext.Sub(wall)) // the world changed: take it once the gap is over
	}
	return m.schedule(pumpPlan{after: max(after, m.opts.Frame), onBus: true})
}

// schedule arms the pump for p. Waiting on the bus, a wake-up waits one
// frame more, so that a burst is drained in one go.
func (m *Model) schedule(p pumpPlan) tea.Cmd {
	m.plan = p
	var sub *bus.Sub
	if p.onBus && m.opts.Source != nil {
		sub = m.opts.Source.Sub()
	}
	switch {
	case p.after <= 0:
		return func() tea.Msg { return FrameMsg{} }
	case sub == nil:
		return tea.Tick(p.after, func(time.Time) tea.Msg { return FrameMsg{} })
	}
	frame := m.opts.Frame
	return func() tea.Msg {
		t := time.NewTimer(p.after)
		defer t.Stop()
		select {
		case <-sub.Wait():
			t.Reset(frame)
			<-t.C
		case <-t.C:
		}
		return FrameMsg{}
	}
}

// onKey routes a key: to the open prompt or lesson list, which take every
// key; else to the part that owns it.
func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	k := &m.keys
	switch {
	case m.ctl.inputOpen():
		return m.ctl.onInputKey(msg)
	case m.lesson.listOpen && msg.String() == "ctrl+c":
		return m.opts.Quit()
	case m.lesson.listOpen:
		m.lesson.onListKey(msg, k)
		return nil
	case key.Matches(msg, k.Quit):
		return m.opts.Quit()
	case key.Matches(msg, k.Help):
		m.showHelp = !m.showHelp
		return nil
	case msg.String() == "esc":
		m.showHelp = false
		m.ctl.clearStatus()
		m.logs.close()
		return nil
	case key.Matches(msg, k.Log):
		if m.logs.open {
			m.logs.close()
			return nil
		}
		return m.showLog("")
	case key.Matches(msg, k.LogReplica) && m.logs.open:
		return m.showLog(nextReplica(m.feed.stats.Styles[m.logs.st], m.logs.replica))
	}
	if m.ctl.mode == modeNormal && m.lesson.onStepKey(msg) {
		return nil
	}
	if key.Matches(msg, k.LessonPredict) {
		return m.lesson.ask(m.ctl)
	}
	if ok, cmd := m.ctl.onKey(msg, k, m.target()); ok {
		return cmd
	}
	if m.panes.onKey(msg, k) {
		if m.logs.open && m.logs.st != m.panes.focused() {
			return m.showLog("") // the log follows the focus
		}
		return nil
	}
	if !m.feed.onKey(msg, k) {
		m.lesson.onKey(msg, k, m.styles)
	}
	return nil
}

// showLog opens the log of replica of the focused pane's operator (""
// for its leader, or its first replica).
func (m *Model) showLog(replica string) tea.Cmd {
	if m.logs.src == nil {
		m.ctl.say("no operator logs here (a replay records the trace only)", true)
		return nil
	}
	st := m.panes.focused()
	if replica == "" {
		holder := ""
		if ns := m.feed.namespace(st); ns != nil && ns.Lease != nil {
			holder = ns.Lease.Holder
		}
		replica = defaultReplica(m.feed.stats.Styles[st], holder)
	}
	return m.logs.show(st, replica)
}

// target is what the action keys act on now.
func (m *Model) target() target {
	t := target{focused: m.panes.focused(), echo: m.echoView(), replicas: -1}
	// The Deployment of the focused style, or of any.
	order := append([]style.Style{t.focused}, m.panes.order...)
	if e := m.feed.echo(m.opts.Echo, order...); e != nil && e.Deployment != nil {
		t.replicas = int(e.Deployment.Replicas)
	}
	return t
}

// echoView is the Echo shown, from the first style that has it.
func (m *Model) echoView() *world.EchoView { return m.feed.echo(m.opts.Echo, m.panes.order...) }

// Ingest folds events into the screen: evs, then the backlog, within the
// budget; what is left waits for the next Update.
func (m *Model) Ingest(evs []trace.Event) {
	if m.feed.ingest(evs) {
		m.draw.dirty = true
	}
}

// Pending is how many drained events wait to be folded.
func (m *Model) Pending() int { return len(m.feed.backlog) }

// SetSnapshot shows a new world model and notes which pods are new.
func (m *Model) SetSnapshot(s world.Snapshot) {
	if m.feed.setSnapshot(s) {
		m.draw.dirty = true
	}
	m.ctl.remember(m.echoView())
}

// Reset forgets every event and the world, keeping the layout, focus and
// filters: a replay seeking backwards starts over.
func (m *Model) Reset() {
	m.feed.reset()
	m.draw.dirty = true
}

// Focused is the style of the focused pane.
func (m *Model) Focused() string { return string(m.panes.focused()) }

// Stats are the folded trace (for tests and benchmarks).
func (m *Model) Stats() *stats.Stats { return m.feed.stats }

// WaitActions waits up to d for the actions under way to return (their
// context should be cancelled first), so the sandbox is not stopped under
// them.
func (m *Model) WaitActions(d time.Duration) { m.ctl.wait(d) }
