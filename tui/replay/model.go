package replay

import (
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kkloud/rlab/tui"
	"github.com/kkloud/rlab/tui/common"
)

// Keys of the replay, on top of the screen's own.
type Keys struct {
	Play, Faster, Slower, Back, Forward, Restart key.Binding
}

// DefaultKeys: space plays/pauses, < > change speed, ← → seek 10 s, 0 restarts.
func DefaultKeys() Keys {
	return Keys{
		Play:    key.NewBinding(key.WithKeys("space", " "), key.WithHelp("space", "play/pause replay")),
		Faster:  key.NewBinding(key.WithKeys(">", "."), key.WithHelp(">", "faster")),
		Slower:  key.NewBinding(key.WithKeys("<", ","), key.WithHelp("<", "slower")),
		Back:    key.NewBinding(key.WithKeys("left"), key.WithHelp("←", "back 10s")),
		Forward: key.NewBinding(key.WithKeys("right"), key.WithHelp("→", "forward 10s")),
		Restart: key.NewBinding(key.WithKeys("0"), key.WithHelp("0", "from the start")),
	}
}

// SeekStep is how far ← and → move.
const SeekStep = 10 * time.Second

type tickMsg time.Time

// Model plays a recording through the main screen.
type Model struct {
	P     *Playback
	Inner *tui.Model
	keys  Keys
	frame time.Duration
	last  time.Time
}

// Options of a replay screen.
type Options struct {
	Speed  float64
	Paused bool
	Frame  time.Duration
	Dark   bool
}

// New returns a replay of rec.
func New(rec *Recording, o Options) *Model {
	p := NewPlayback(rec)
	if o.Speed > 0 {
		p.SetSpeed(o.Speed)
	}
	p.SetPaused(o.Paused)
	if o.Frame <= 0 {
		o.Frame = tui.DefaultFrame
	}
	m := &Model{P: p, keys: DefaultKeys(), frame: o.Frame}
	h := rec.Header
	backend := "replay"
	if h.Backend != "" {
		backend = "replay of " + h.Backend
	}
	m.Inner = tui.New(tui.Options{
		Source: p,
		Info:   tui.Info{Backend: backend, Version: h.Version},
		Styles: h.Styles,
		Echo:   h.Echo,
		Frame:  o.Frame,
		Now:    p.Now,
		Start:  h.Start,
		Dark:   o.Dark,
		Extra:  m.status,
		Hint:   "replay: space play/pause · < > speed · ← → seek 10s · 0 from the start",
	})
	return m
}

// status is the replay's place in the header: ▶ 2× 00:41/01:30.
func (m *Model) status() string {
	icon := "▶"
	switch {
	case m.P.Ended():
		icon = "■"
	case m.P.Paused():
		icon = "⏸"
	}
	sp := fmt.Sprintf("%g×", m.P.Speed())
	if m.P.Speed() < 1 {
		sp = fmt.Sprintf("1/%g×", 1/m.P.Speed())
	}
	return fmt.Sprintf("%s %s %s/%s", icon, sp,
		common.Clock(m.P.Now().Sub(m.P.Start())), common.Clock(m.P.End().Sub(m.P.Start())))
}

func (m *Model) tick() tea.Cmd {
	return tea.Tick(m.frame, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Init starts the screen and the replay clock.
func (m *Model) Init() tea.Cmd {
	m.last = time.Now()
	return tea.Batch(m.Inner.Init(), m.tick())
}

// SeekTo starts the screen over at t of the recording.
func (m *Model) SeekTo(t time.Time) {
	evs := m.P.Seek(t)
	m.Inner.Reset()
	m.Inner.Ingest(evs)
	for m.Inner.Pending() > 0 {
		m.Inner.Ingest(nil)
	}
	m.Inner.SetSnapshot(m.P.Snapshot())
}

// Update handles the replay's keys and clock, and passes the rest on.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tickMsg:
		now := time.Time(msg)
		m.P.Advance(now.Sub(m.last))
		m.last = now
		return m, m.tick()
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, m.keys.Play):
			if m.P.Ended() {
				m.SeekTo(m.P.Start())
			}
			m.P.SetPaused(!m.P.Paused())
		case key.Matches(msg, m.keys.Faster):
			m.P.SetSpeed(m.P.Speed() * 2)
		case key.Matches(msg, m.keys.Slower):
			m.P.SetSpeed(m.P.Speed() / 2)
		case key.Matches(msg, m.keys.Back):
			m.SeekTo(m.P.Now().Add(-SeekStep))
		case key.Matches(msg, m.keys.Forward):
			m.SeekTo(m.P.Now().Add(SeekStep))
		case key.Matches(msg, m.keys.Restart):
			m.SeekTo(m.P.Start())
		default:
			_, cmd := m.Inner.Update(msg)
			return m, cmd
		}
		_, cmd := m.Inner.Update(tui.FrameMsg{}) // redraw at once
		_ = cmd                                  // the inner pump is already armed
		return m, nil
	}
	_, cmd := m.Inner.Update(msg)
	return m, cmd
}

// View is the screen's.
func (m *Model) View() tea.View { return m.Inner.View() }
