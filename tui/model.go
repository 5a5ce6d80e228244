package tui

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/lessonpanel"
	"github.com/kkloud/rlab/tui/pane"
	"github.com/kkloud/rlab/tui/stats"
	"github.com/kkloud/rlab/tui/timeline"
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
	// idleFrames: while nothing moves the bus is drained every idleFrames
	// frames (200 ms); the first event makes the marker move again.
	idleFrames = 6
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
	Styles  []string // panes, in order; shell, clientgo, runtime if empty
	Echo    string   // the Echo shown and acted on; DefaultEcho if empty

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
	// Guide is the lesson followed (`rlab lesson start`): the screen shows
	// the lesson panel and the lesson keys drive it. nil: no lesson.
	Guide Guide
}

type mode int

const (
	modeNormal mode = iota
	modeMessage
	modeScale
)

// FrameMsg is the pump's tick: drain the bus, fold, maybe redraw.
type FrameMsg struct{}

// actionMsg is the result of an action Cmd.
type actionMsg struct {
	what string // "replicas → 3"
	err  error
	mode mode // the input mode the action came from
}

type status struct {
	text string
	err  bool
}

// Model is the main screen. It is used through a pointer: View keeps a
// cache, redrawn only when something changed.
type Model struct {
	opts   Options
	keys   common.KeyMap
	help   help.Model
	styles *common.Styles
	w, h   int

	stats   *stats.Stats
	tl      *timeline.Model
	backlog []trace.Event

	snap    world.Snapshot
	snapVer uint64
	hasSnap bool
	podSeen map[string]time.Time // "ns/pod" → first seen

	focus     int
	full      bool
	showVerbs bool
	showHelp  bool

	mode    mode
	input   textinput.Model
	inputEr string
	busy    string
	status  status

	// wantReplicas is the last replicas asked for, so that `+ + +` adds up
	// before the world shows the first.
	wantReplicas int
	wantAt       time.Time
	// last known spec, to create the Echo again after `x`.
	lastMessage  string
	lastReplicas int

	dirty   bool
	moving  bool // the marker moves: draw events as they come (see animating)
	urgent  bool // a key, a resize or an action's result: draw at once
	cache   string
	timeKey int64
	drawn   time.Time // when the cache was drawn (wall clock)

	helpLine string // the short help, drawn for helpW and helpDark
	helpW    int
	helpDark bool

	// The lesson, read from the Guide once per frame.
	guide    GuideState
	panels   map[int]*lessonpanel.Panel // by width, laid out for panelKey
	panelKey panelKey
	listOpen bool // the lesson list is open
	list     lessonpanel.List

	inflight atomic.Int64 // actions running
}

// New returns the main screen model.
func New(opts Options) *Model {
	if len(opts.Styles) == 0 {
		opts.Styles = []string{"shell", "clientgo", "runtime"}
	}
	if opts.Echo == "" {
		opts.Echo = DefaultEcho
	}
	if opts.Frame <= 0 {
		opts.Frame = DefaultFrame
	}
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Start.IsZero() {
		opts.Start = opts.Now()
	}
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	if opts.Quit == nil {
		opts.Quit = func() tea.Cmd { return tea.Quit }
	}
	ti := textinput.New()
	ti.CharLimit = 256
	m := &Model{
		opts:         opts,
		keys:         common.DefaultKeyMap(),
		help:         help.New(),
		stats:        stats.New(opts.Styles),
		tl:           timeline.New(opts.TimelineSize, opts.Styles),
		podSeen:      map[string]time.Time{},
		input:        ti,
		lastMessage:  DefaultMessage,
		lastReplicas: 2,
		dirty:        true,
	}
	if opts.Guide != nil {
		m.keys = m.keys.Lesson()
		m.guide = opts.Guide.State()
	}
	m.setDark(opts.Dark)
	return m
}

func (m *Model) setDark(dark bool) {
	m.styles = common.NewStyles(dark)
	m.help.Styles = help.DefaultStyles(dark)
	m.input.SetStyles(textinput.DefaultStyles(dark))
	m.dirty, m.urgent = true, true
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
		m.dirty, m.urgent = true, true
	case tea.BackgroundColorMsg:
		m.setDark(msg.IsDark())
	case actionMsg:
		return m, m.onAction(msg)
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	case tea.PasteMsg:
		if m.mode != modeNormal {
			var cmd tea.Cmd
			m.input, cmd = m.input.Update(msg)
			m.dirty, m.urgent = true, true
			return m, cmd
		}
	}
	return m, nil
}

// onFrame drains the bus once, folds what it can within the budget, looks
// at the world if it changed, and re-arms the pump: at once if events are
// still waiting, else after one frame.
func (m *Model) onFrame() tea.Cmd {
	now := m.opts.Now()
	if sub := m.opts.Source.Sub(); sub != nil {
		evs, dropped := sub.Drain()
		if dropped > 0 {
			m.backlog = append(m.backlog, trace.Event{Time: now, Source: "rlab", Kind: trace.Dropped,
				Fields: map[string]any{"count": dropped}})
		}
		m.Ingest(evs)
	} else {
		m.Ingest(nil)
	}
	if v := m.opts.Source.Version(); v != m.snapVer || !m.hasSnap {
		m.snapVer = v
		m.SetSnapshot(m.opts.Source.Snapshot())
	}
	m.pollGuide()
	// Things that move with time (countdowns, the marker, flashes) are
	// redrawn ten times a second while something moves, else once a second.
	flashing, moving := m.animating(now)
	m.moving = moving
	step := int64(time.Second / time.Millisecond)
	if flashing {
		step = int64(pane.FlashEvery / time.Millisecond)
	} else if moving {
		step = int64(pane.MarkerHot / time.Millisecond) // the marker cools down
	}
	if tk := now.UnixMilli() / step; tk != m.timeKey {
		m.timeKey = tk
		m.dirty = true
	}
	switch {
	case len(m.backlog) > 0:
		return func() tea.Msg { return FrameMsg{} }
	case !moving:
		// Nothing moves: look at the bus idleFrames times less often. Keys do
		// not wait for frames, and the first event lights the marker.
		return tea.Tick(idleFrames*m.opts.Frame, func(time.Time) tea.Msg { return FrameMsg{} })
	}
	return m.frame()
}

// animating says how the screen moves by itself now. flashing: a garbage
// collection flashes (redrawn at the flash phase); moving: the pipeline
// marker moved lately, so the events that move it are drawn as they come
// (else they are coalesced). Everything else on screen counts in whole
// seconds, and is redrawn once a second.
func (m *Model) animating(now time.Time) (flashing, moving bool) {
	for _, st := range m.stats.Styles {
		if len(st.Collected(now, pane.FlashFor)) > 0 {
			flashing = true
		}
		if st.Stage >= 0 && now.Sub(st.StageAt) < 2*pane.MarkerHot {
			moving = true
		}
	}
	return flashing, moving || flashing
}

// Ingest folds events into the screen: evs, then the backlog, within the
// budget; what is left waits for the next Update.
func (m *Model) Ingest(evs []trace.Event) {
	switch {
	case len(evs) == 0:
	case len(m.backlog) == 0:
		m.backlog = evs // the caller hands them over: no copy
	default:
		m.backlog = append(m.backlog, evs...)
	}
	if n := len(m.backlog); n > maxBacklog {
		// Producers outran the screen for far too long: keep the newest.
		drop := n - maxBacklog
		m.backlog = append(m.backlog[:0:0], m.backlog[drop:]...)
		m.backlog = append(m.backlog, trace.Event{Time: m.opts.Now(), Source: "rlab", Kind: trace.Dropped,
			Fields: map[string]any{"count": drop}})
	}
	if len(m.backlog) == 0 {
		return
	}
	start := time.Now()
	i := 0
	for i < len(m.backlog) {
		e := m.backlog[i]
		m.stats.Apply(e)
		m.tl.Add(e)
		if !background(e) || m.tl.Shows(e) {
			m.dirty = true
		}
		i++
		if i%256 == 0 && time.Since(start) > m.opts.Budget {
			break
		}
	}
	if i == len(m.backlog) {
		m.backlog = nil // the drained slice is the Sub's copy: let it go
	} else {
		m.backlog = m.backlog[i:]
	}
}

// Reset forgets every event and the world, keeping the layout, focus and
// filters: a replay seeking backwards starts over.
func (m *Model) Reset() {
	m.stats = stats.New(m.opts.Styles)
	m.tl.Clear()
	m.backlog = nil
	m.snap, m.hasSnap = world.Snapshot{}, false
	m.podSeen = map[string]time.Time{}
	m.dirty = true
}

// Pending is how many drained events wait to be folded.
func (m *Model) Pending() int { return len(m.backlog) }

// SetSnapshot shows a new world model and notes which pods are new.
func (m *Model) SetSnapshot(s world.Snapshot) {
	now := m.opts.Now()
	seen := make(map[string]time.Time, len(m.podSeen))
	for ns, v := range s.Namespaces {
		for _, d := range deploymentsOf(v) {
			for _, p := range d.Pods {
				k := ns + "/" + p.Name
				t, ok := m.podSeen[k]
				switch {
				case ok:
				case !m.hasSnap:
					t = time.Time{} // there from the start: not new
				default:
					t = now
				}
				seen[k] = t
			}
		}
	}
	m.podSeen = seen
	// A Lease renewal (each Go style, every second) changes only the
	// Lease's time left, which is redrawn once a second anyway.
	renewalOnly := m.hasSnap && onlyRenewed(m.snap, s)
	m.snap, m.hasSnap = s, true
	if ev := m.echoView(); ev != nil {
		m.lastMessage, m.lastReplicas = ev.Message, int(ev.Replicas)
	}
	if !renewalOnly {
		m.dirty = true
	}
}

// onlyRenewed says whether b differs from a in Lease renewal times alone.
func onlyRenewed(a, b world.Snapshot) bool {
	if len(a.Namespaces) != len(b.Namespaces) {
		return false
	}
	for ns, bv := range b.Namespaces {
		av := a.Namespaces[ns]
		if av == nil || bv == nil {
			return av == bv
		}
		if (av.Lease == nil) != (bv.Lease == nil) {
			return false
		}
		if av.Lease != nil {
			al, bl := *av.Lease, *bv.Lease
			al.Renewed, bl.Renewed = time.Time{}, time.Time{}
			if al != bl {
				return false
			}
		}
		ac, bc := *av, *bv
		ac.Lease, bc.Lease = nil, nil
		if !reflect.DeepEqual(ac, bc) {
			return false
		}
	}
	return true
}

// background says whether an event moves nothing on screen but a counter
// that is redrawn once a second anyway: the Lease renewals and leader
// events' API requests, which never leave the timeline's default filter.
func background(e trace.Event) bool {
	if e.Kind != trace.APIRequest {
		return false
	}
	r := e.Str("resource")
	return r == "leases" || r == "events"
}

func deploymentsOf(v *world.NamespaceView) []*world.DeploymentView {
	if v == nil {
		return nil
	}
	var out []*world.DeploymentView
	for _, e := range v.Echoes {
		if e.Deployment != nil {
			out = append(out, e.Deployment)
		}
	}
	return append(out, v.Orphans...)
}

// echoView is the Echo shown, from the first style that has it.
func (m *Model) echoView() *world.EchoView {
	for _, st := range m.opts.Styles {
		if ns := m.snap.Namespaces["echo-"+st]; ns != nil {
			if e := ns.Echoes[m.opts.Echo]; e != nil {
				return e
			}
		}
	}
	return nil
}

// deployReplicas is the desired replicas of the Echo's Deployment in the
// focused style (or any).
func (m *Model) deployReplicas() int {
	order := append([]string{m.focused()}, m.opts.Styles...)
	for _, st := range order {
		if ns := m.snap.Namespaces["echo-"+st]; ns != nil {
			if e := ns.Echoes[m.opts.Echo]; e != nil && e.Deployment != nil {
				return int(e.Deployment.Replicas)
			}
		}
	}
	return m.lastReplicas
}

func (m *Model) focused() string { return m.opts.Styles[m.focus] }

// Focused is the style of the focused pane.
func (m *Model) Focused() string { return m.focused() }

// Stats are the folded trace (for tests and benchmarks).
func (m *Model) Stats() *stats.Stats { return m.stats }

// run starts an action as a Cmd: it never blocks Update.
func (m *Model) run(what string, from mode, fn func(ctx context.Context) (string, error)) tea.Cmd {
	if m.opts.Actions == nil {
		m.status = status{text: "no cluster in a replay: actions are off", err: true}
		m.dirty = true
		return nil
	}
	m.busy = what + " …"
	m.dirty = true
	ctx := m.opts.Context
	return func() tea.Msg {
		m.inflight.Add(1)
		defer m.inflight.Add(-1)
		ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
		done, err := fn(ctx)
		if done == "" {
			done = what
		}
		return actionMsg{what: done, err: err, mode: from}
	}
}

// WaitActions waits up to d for the actions under way to return (their
// context should be cancelled first), so the sandbox is not stopped under
// them.
func (m *Model) WaitActions(d time.Duration) {
	deadline := time.Now().Add(d)
	for m.inflight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

func (m *Model) onAction(msg actionMsg) tea.Cmd {
	m.busy = ""
	m.dirty, m.urgent = true, true
	if msg.err != nil {
		if msg.mode != modeNormal && m.mode == msg.mode {
			// Shown inline, under the input, as the apiserver worded it;
			// the input stays open to correct it.
			m.inputEr = msg.err.Error()
			return nil
		}
		m.status = status{text: msg.what + ": " + msg.err.Error(), err: true}
		m.wantAt = time.Time{}
		return nil
	}
	if msg.mode != modeNormal && m.mode == msg.mode {
		m.closeInput()
	}
	m.status = status{text: "✓ " + msg.what}
	return nil
}

func (m *Model) closeInput() {
	m.mode = modeNormal
	m.inputEr = ""
	m.input.Blur()
	m.dirty = true
}

func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	m.dirty, m.urgent = true, true
	if m.mode != modeNormal {
		return m.onInputKey(msg)
	}
	if m.listOpen {
		return m.onListKey(msg)
	}
	k := m.keys
	name := m.opts.Echo
	switch {
	case key.Matches(msg, k.Quit):
		return m.opts.Quit()
	case key.Matches(msg, k.Help):
		m.showHelp = !m.showHelp
	case key.Matches(msg, k.More), key.Matches(msg, k.Less):
		n := m.lastReplicas
		if ev := m.echoView(); ev != nil {
			n = int(ev.Replicas)
		}
		if !m.wantAt.IsZero() && m.opts.Now().Sub(m.wantAt) < 3*time.Second {
			n = m.wantReplicas
		}
		if key.Matches(msg, k.More) {
			n++
		} else {
			n--
		}
		m.wantReplicas, m.wantAt = n, m.opts.Now()
		return m.run(fmt.Sprintf("Echo/%s replicas → %d (all styles)", name, n), modeNormal, func(ctx context.Context) (string, error) {
			return "", m.opts.Actions.SetReplicas(ctx, name, n)
		})
	case key.Matches(msg, k.Edit):
		m.mode = modeMessage
		m.input.Prompt = "message: "
		m.input.SetValue(m.lastMessage)
		m.input.CursorEnd()
		m.inputEr = ""
		return m.input.Focus()
	case key.Matches(msg, k.Scale):
		m.mode = modeScale
		m.input.Prompt = fmt.Sprintf("scale Deployment echo-%s by hand (all styles) to: ", name)
		m.input.SetValue(strconv.Itoa(m.deployReplicas() + 1))
		m.input.CursorEnd()
		m.inputEr = ""
		return m.input.Focus()
	case key.Matches(msg, k.DeleteDeployment):
		return m.run("deleted Deployment echo-"+name+" by hand (all styles)", modeNormal, func(ctx context.Context) (string, error) {
			return "", m.opts.Actions.DeleteDeployment(ctx, "", name)
		})
	case key.Matches(msg, k.DeleteEcho):
		return m.run("deleted Echo/"+name+" (all styles; GC removes its Deployment)", modeNormal, func(ctx context.Context) (string, error) {
			return "", m.opts.Actions.DeleteEcho(ctx, name)
		})
	case key.Matches(msg, k.CreateEcho):
		msgText, n := m.lastMessage, m.lastReplicas
		return m.run(fmt.Sprintf("created Echo/%s ×%d %q (all styles)", name, n, msgText), modeNormal, func(ctx context.Context) (string, error) {
			return "", m.opts.Actions.CreateEcho(ctx, name, msgText, n)
		})
	case key.Matches(msg, k.Kill), key.Matches(msg, k.Stop):
		style := m.focused()
		kill := key.Matches(msg, k.Kill)
		if style == "shell" {
			m.status = status{text: "the shell loop has no leader: one replica, no election (focus a Go style with tab)", err: true}
			return nil
		}
		verb := "stopped (SIGTERM)"
		if kill {
			verb = "killed (SIGKILL)"
		}
		return m.run(verb+" the leader of "+common.Title(style), modeNormal, func(ctx context.Context) (string, error) {
			var who string
			var err error
			if kill {
				who, err = m.opts.Actions.KillLeader(ctx, style)
			} else {
				who, err = m.opts.Actions.StopLeader(ctx, style)
			}
			return verb + " leader " + who + " of " + common.Title(style), err
		})
	case key.Matches(msg, k.Next):
		m.focus = (m.focus + 1) % len(m.opts.Styles)
	case key.Matches(msg, k.Prev):
		m.focus = (m.focus + len(m.opts.Styles) - 1) % len(m.opts.Styles)
	case key.Matches(msg, k.Focus):
		if i, err := strconv.Atoi(msg.String()); err == nil && i >= 1 && i <= len(m.opts.Styles) {
			m.focus = i - 1
		}
	case key.Matches(msg, k.Full):
		m.full = !m.full
	case key.Matches(msg, k.Verbs):
		m.showVerbs = !m.showVerbs
	case key.Matches(msg, k.Filter):
		m.tl.CycleStyle()
	case key.Matches(msg, k.Kinds):
		m.tl.CycleKind()
	case key.Matches(msg, k.Pause):
		m.tl.TogglePause()
	case key.Matches(msg, k.Up):
		m.tl.Scroll(1)
	case key.Matches(msg, k.Down):
		m.tl.Scroll(-1)
	case key.Matches(msg, k.PageUp):
		m.tl.Scroll(10)
	case key.Matches(msg, k.PageDown):
		m.tl.Scroll(-10)
	case key.Matches(msg, k.Top):
		m.tl.Top()
	case key.Matches(msg, k.Bottom):
		m.tl.Follow()
	case key.Matches(msg, k.LessonNext):
		// The Guide returns at once; what it changed already is drawn now,
		// the rest on a later frame.
		m.opts.Guide.Next()
		m.pollGuide()
	case key.Matches(msg, k.LessonBack):
		m.opts.Guide.Back()
		m.pollGuide()
	case key.Matches(msg, k.LessonPlay):
		m.opts.Guide.Play()
		m.pollGuide()
	case key.Matches(msg, k.Lessons):
		m.openList()
	case msg.String() == "esc":
		m.showHelp = false
		m.status = status{}
	}
	return nil
}

func (m *Model) onInputKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc", "ctrl+c":
		m.closeInput()
		return nil
	case "enter":
		if m.busy != "" {
			return nil
		}
		val := m.input.Value()
		name := m.opts.Echo
		m.inputEr = ""
		if m.mode == modeScale {
			n, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil || n < 0 {
				m.inputEr = fmt.Sprintf("%q is not a number of replicas", val)
				return nil
			}
			return m.run(fmt.Sprintf("scaled Deployment echo-%s to %d by hand (all styles)", name, n), modeScale, func(ctx context.Context) (string, error) {
				return "", m.opts.Actions.ScaleDeployment(ctx, "", name, n)
			})
		}
		return m.run(fmt.Sprintf("Echo/%s message → %q (all styles)", name, val), modeMessage, func(ctx context.Context) (string, error) {
			return "", m.opts.Actions.SetMessage(ctx, name, val)
		})
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return cmd
}
