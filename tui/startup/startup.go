// Package startup is the view shown while the sandbox comes up: each phase
// with its time as it ends, the one under way with a running clock, the
// control-plane build's output when the cache was empty, and a start-up
// error in full.
package startup

import (
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/tui/common"
)

// BuildLines is how many lines of the asset build stay on screen.
const BuildLines = 12

// Phase is one finished start-up phase.
type Phase struct {
	Name string
	Took time.Duration
}

// Model is the start-up view's state.
type Model struct {
	Title  string   // "starting the sandbox · envtest v1.36.3"
	Notes  []string // e.g. "cleaned up etcd (pid 123) left by a previous run"
	Phases []Phase
	Began  time.Time
	Build  []string // the last BuildLines lines of the asset build
	built  bool
	Err    error
	Failed time.Time
	// Stopping is set once the user asked to quit during start-up.
	Stopping bool
	// Words are the view's words and its phases' names in the lesson's
	// language; nil is English. Phases keep their English names: the
	// view translates them as it draws.
	Words lessonview.Words
}

// New returns a start-up view that began at t.
func New(title string, t time.Time) *Model { return &Model{Title: title, Began: t} }

// AddPhase records a finished phase.
func (m *Model) AddPhase(p Phase) { m.Phases = append(m.Phases, p) }

// AddBuildLine records a line of the asset build's output.
func (m *Model) AddBuildLine(l string) {
	m.built = true
	l = strings.TrimRight(l, "\r\n")
	m.Build = append(m.Build, l)
	if n := len(m.Build); n > BuildLines {
		m.Build = append(m.Build[:0], m.Build[n-BuildLines:]...)
	}
}

// Fail records the start-up error.
func (m *Model) Fail(err error, t time.Time) { m.Err, m.Failed = err, t }

// PhaseFormats are the phase names with a part that varies, as the
// sandbox makes them: a namespace prefix, the sample Echo's replicas.
// Every other phase name is translated whole.
var PhaseFormats = []string{"namespaces %s*", "sample echo %s"}

// PhaseName is a phase's name in w's language: whole, or through the
// PhaseFormats it matches, its varying part kept.
func PhaseName(w lessonview.Words, name string) string {
	if t, ok := w[name]; ok && t != "" {
		return t
	}
	for _, f := range PhaseFormats {
		pre, suf, _ := strings.Cut(f, "%s")
		if len(name) >= len(pre)+len(suf) && strings.HasPrefix(name, pre) && strings.HasSuffix(name, suf) {
			return w.F(f, name[len(pre):len(name)-len(suf)])
		}
	}
	return name
}

var spin = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Render draws the view, w×h at most.
func (m *Model) Render(now time.Time, w, h int, s *common.Theme) string {
	var out []string
	tr := m.Words
	add := func(l *common.Line) { out = append(out, l.Fit(w)) }
	add((&common.Line{}).Plain(" ").Add(s.Accent, "rlab").Add(s.Dim, " · ").Plain(m.Title))
	out = append(out, "")
	for _, n := range m.Notes {
		add((&common.Line{}).Add(s.Warn, "   ! ").Plain(n))
	}
	var last time.Time = m.Began
	for _, p := range m.Phases {
		l := &common.Line{}
		l.Add(s.OK, "   ✓ ").Plain(common.Fit(PhaseName(tr, p.Name), 26)).Add(s.Dim, pad(common.Dur(p.Took), 8))
		add(l)
		last = last.Add(p.Took)
	}
	total := now.Sub(m.Began)
	switch {
	case m.Err != nil:
		total = m.Failed.Sub(m.Began)
		add((&common.Line{}).Add(s.Err, "   ✗ ").Plain(tr.F("start-up failed after %s", common.Dur(total))))
		out = append(out, "")
		for _, l := range strings.Split(ansi.Wrap(m.Err.Error(), max(w-6, 20), " "), "\n") {
			add((&common.Line{}).Pad(5).Add(s.Err, l))
		}
		out = append(out, "")
		add((&common.Line{}).Pad(3).Add(s.Bold, tr.T("press any key to exit")))
	case m.Stopping:
		i := int(total/(100*time.Millisecond)) % len(spin)
		add((&common.Line{}).Add(s.Accent, "   "+spin[i]+" ").Plain(tr.T("interrupted: stopping what was started …")))
	default:
		i := int(total/(100*time.Millisecond)) % len(spin)
		what := tr.T("starting")
		switch {
		case m.built && len(m.Phases) == 0:
			what = tr.T("building the control plane (first run only; about 5 minutes on 2 cores)")
		case len(m.Phases) > 0 && m.Phases[len(m.Phases)-1].Name == "operators started":
			what = tr.T("Echo hello → 2/2 in every style (the shell loop polls)")
		}
		l := &common.Line{}
		l.Add(s.Accent, "   "+spin[i]+" ").Plain(what+" … ").Add(s.Dim, common.Dur(now.Sub(last)))
		l.Add(s.Dim, "   "+tr.F("total %s", common.Dur(total)))
		add(l)
	}
	if len(m.Build) > 0 {
		out = append(out, "")
		body := make([]string, 0, len(m.Build))
		for _, b := range m.Build {
			body = append(body, s.Dim.S(b))
		}
		title := tr.T("control-plane build output")
		out = append(out, common.Box(s.Bold.S(title), common.Width(title), body, w, len(body)+2, s.Border)...)
	}
	if m.Err == nil {
		out = append(out, "", s.Dim.S(common.Fit(" "+tr.F("%s stops and cleans up", "q"), w)))
	}
	if len(out) > h && h > 0 {
		out = out[len(out)-h:]
	}
	return strings.Join(out, "\n")
}

func pad(s string, n int) string {
	if w := common.Width(s); w < n {
		return strings.Repeat(" ", n-w) + s
	}
	return s
}
