package tui

import (
	"reflect"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/world"
	"github.com/kkloud/rlab/tui/common"
	"github.com/kkloud/rlab/tui/pane"
	"github.com/kkloud/rlab/tui/stats"
	"github.com/kkloud/rlab/tui/timeline"
)

// Snapshots of the world are taken at most this often: while events move
// the screen, as often as it is redrawn; else (Lease renewals, which change
// the world every second or two) once a second, since a snapshot copies the
// whole world (1,500 Echoes and their pods in a class).
const (
	snapGapBusy = minRedraw
	snapGapIdle = idleRedraw
)

// feed is the screen's one view of the sandbox: the events of the Source
// folded into stats and the timeline, and the world model, taken when its
// version changes. Everything the panes show comes from here. It owns the
// timeline's keys.
type feed struct {
	src    Source
	now    func() time.Time
	wall   func() time.Time // spaces the snapshots (now may be a replay's clock)
	budget time.Duration
	styles []style.Style
	focus  string // the Echo whose tree is shown

	stats   *stats.Stats
	tl      *timeline.Model
	backlog []trace.Event // drained, not folded yet

	snap     world.Snapshot
	ver      uint64
	hasSnap  bool
	seenEcho bool // the focused Echo was in some snapshot

	snapAt   time.Time // wall clock of the last snapshot taken in pull
	snapWait bool      // the world changed, its snapshot waits for the gap…
	snapNext time.Time // …until then (wall clock)
	// shown is, per style, what the screen shows of the world: a new
	// snapshot redraws only if it differs.
	shown   map[style.Style]worldShown
	podSeen map[string]time.Time // "style/pod" → first seen, of the focused Echo's pods
}

// worldShown is what the screen shows of one style's namespace: the
// summary of all its Echoes, the focused Echo's tree, and the Lease but
// its renewal time (redrawn once a second anyway).
type worldShown struct {
	present bool
	sum     pane.Summary
	echo    *world.EchoView
	orphans []*world.DeploymentView // named after the focused Echo
	lease   world.LeaseView
	hasLse  bool
}

func newFeed(o Options, styles []style.Style) *feed {
	return &feed{src: o.Source, now: o.Now, wall: time.Now, budget: o.Budget, styles: styles, focus: o.Echo,
		stats: stats.New(styles), tl: timeline.New(o.TimelineSize, styles),
		shown: map[style.Style]worldShown{}, podSeen: map[string]time.Time{}}
}

// pull drains the bus once and takes the world if it changed (at most once
// a snapshot gap); it says whether anything on screen changed.
func (f *feed) pull() bool {
	var evs []trace.Event
	if sub := f.src.Sub(); sub != nil {
		var dropped int
		evs, dropped = sub.Drain()
		if dropped > 0 {
			f.backlog = append(f.backlog, dropEvent(f.now(), dropped))
		}
	}
	dirty := f.ingest(evs)
	f.snapWait = false
	if v := f.src.Version(); v != f.ver || !f.hasSnap {
		gap := snapGapIdle
		if dirty {
			gap = snapGapBusy // something moves: the tree should keep up
		}
		if wall := f.wall(); !f.hasSnap || wall.Sub(f.snapAt) >= gap {
			f.ver, f.snapAt = v, wall
			dirty = f.setSnapshot(f.src.Snapshot()) || dirty
		} else {
			f.snapWait, f.snapNext = true, f.snapAt.Add(gap)
		}
	}
	return dirty
}

// dropEvent says that n events never reached the screen.
func dropEvent(at time.Time, n int) trace.Event {
	return trace.Event{Time: at, Source: trace.SourceRlab, Kind: trace.Dropped, Payload: trace.Loss{Count: int(n)}}
}

// ingest folds evs, then the backlog, within the budget; what is left
// waits for the next call. It says whether anything on screen changed.
func (f *feed) ingest(evs []trace.Event) bool {
	switch {
	case len(evs) == 0:
	case len(f.backlog) == 0:
		f.backlog = evs // the caller hands them over: no copy
	default:
		f.backlog = append(f.backlog, evs...)
	}
	if n := len(f.backlog); n > maxBacklog {
		// Producers outran the screen for far too long: keep the newest.
		drop := n - maxBacklog
		f.backlog = append(f.backlog[:0:0], f.backlog[drop:]...)
		f.backlog = append(f.backlog, dropEvent(f.now(), drop))
	}
	dirty := false
	start := time.Now()
	i := 0
	for i < len(f.backlog) {
		e := f.backlog[i]
		f.stats.Apply(e)
		f.tl.Add(e)
		if !background(e) || f.tl.Shows(e) {
			dirty = true
		}
		i++
		if i%256 == 0 && time.Since(start) > f.budget {
			break
		}
	}
	if i == len(f.backlog) {
		f.backlog = nil // the drained slice is the Sub's copy: let it go
	} else {
		f.backlog = f.backlog[i:]
	}
	return dirty
}

// background says whether an event moves nothing on screen but a counter
// that is redrawn once a second anyway: the Lease renewals and leader
// events' API requests, which never leave the timeline's default filter,
// and the built-in operators' watch events (their informer events move
// their panes).
func background(e trace.Event) bool {
	switch e.Kind {
	case trace.APIRequest:
	case trace.APIWatchEvent:
		if stats.StyleOf(e).Traits().Traces {
			return true
		}
	default:
		return false
	}
	return trace.IsHousekeepingResource(e.Resource())
}

// reset forgets every event and the world, keeping the timeline's filters.
func (f *feed) reset() {
	f.stats = stats.New(f.styles)
	f.tl.Clear()
	f.backlog = nil
	f.snap, f.hasSnap, f.seenEcho = world.Snapshot{}, false, false
	f.shown = map[style.Style]worldShown{}
	f.podSeen = map[string]time.Time{}
}

// setSnapshot takes a new world model and notes which of the focused
// Echo's pods are new; it says whether anything on screen changed. Its work
// is one pass over each namespace's Echoes, with no allocation per Echo: a
// class's world holds 1,500 of them and changes every second.
func (f *feed) setSnapshot(s world.Snapshot) bool {
	now := f.now()
	changed := !f.hasSnap
	seen := make(map[string]time.Time, len(f.podSeen))
	for _, st := range f.styles {
		ns := s.Style(st)
		sh := f.worldShown(ns)
		if !changed && !sameShown(f.shown[st], sh) {
			changed = true
		}
		f.shown[st] = sh
		f.seenEcho = f.seenEcho || sh.echo != nil
		f.seePods(st, sh, seen, now)
	}
	f.podSeen = seen
	f.snap, f.hasSnap = s, true
	return changed
}

// worldShown is what the screen shows of namespace ns.
func (f *feed) worldShown(ns *world.NamespaceView) worldShown {
	if ns == nil {
		return worldShown{}
	}
	sh := worldShown{present: true, sum: pane.Summarize(ns), echo: ns.Echoes[f.focus]}
	for _, o := range ns.Orphans {
		if o.Name == echo.DeploymentName(f.focus) {
			sh.orphans = append(sh.orphans, o)
		}
	}
	if ns.Lease != nil {
		sh.lease, sh.hasLse = *ns.Lease, true
		sh.lease.Renewed = time.Time{}
	}
	return sh
}

// sameShown compares what two snapshots show; only the focused Echo's tree
// is compared deeply, and it is small.
func sameShown(a, b worldShown) bool {
	return a.present == b.present && a.sum == b.sum && a.lease == b.lease && a.hasLse == b.hasLse &&
		reflect.DeepEqual(a.echo, b.echo) && reflect.DeepEqual(a.orphans, b.orphans)
}

// seePods notes when each pod of the focused Echo was first seen (a new one
// fades in).
func (f *feed) seePods(st style.Style, sh worldShown, seen map[string]time.Time, now time.Time) {
	var ds []*world.DeploymentView
	if sh.echo != nil && sh.echo.Deployment != nil {
		ds = append(ds, sh.echo.Deployment)
	}
	for _, d := range append(ds, sh.orphans...) {
		for _, p := range d.Pods {
			k := string(st) + "/" + p.Name
			t, ok := f.podSeen[k]
			switch {
			case ok:
			case !f.hasSnap:
				t = time.Time{} // there from the start: not new
			default:
				t = now
			}
			seen[k] = t
		}
	}
}

// animating says how the screen moves by itself now. flashing: a garbage
// collection flashes (redrawn at the flash phase); moving: the pipeline
// marker moved lately, so the events that move it are drawn as they come
// (else they are coalesced). Everything else on screen counts in whole
// seconds, and is redrawn once a second.
func (f *feed) animating(now time.Time) (flashing, moving bool) {
	for _, st := range f.stats.Styles {
		if len(st.Collected(now, pane.FlashFor)) > 0 {
			flashing = true
		}
		if st.Stage >= 0 && now.Sub(st.StageAt) < 2*pane.MarkerHot {
			moving = true
		}
	}
	return flashing, moving || flashing
}

// namespace is a style's namespace in the world, nil if not seen.
func (f *feed) namespace(st style.Style) *world.NamespaceView {
	return f.snap.Style(st)
}

// echo is the Echo called name, from the first style (in order) that has it.
func (f *feed) echo(name string, order ...style.Style) *world.EchoView {
	for _, st := range order {
		if ns := f.namespace(st); ns != nil {
			if e := ns.Echoes[name]; e != nil {
				return e
			}
		}
	}
	return nil
}

// fresh says whether a pod of style st appeared recently (it fades in).
func (f *feed) fresh(st style.Style, now time.Time) func(pod string) bool {
	return func(pod string) bool {
		t, ok := f.podSeen[string(st)+"/"+pod]
		return ok && !t.IsZero() && now.Sub(t) < freshFor
	}
}

// onKey handles the timeline's keys; ok is false for any other key.
func (f *feed) onKey(msg tea.KeyPressMsg, k *common.KeyMap) (ok bool) {
	switch {
	case key.Matches(msg, k.Filter):
		f.tl.CycleStyle()
	case key.Matches(msg, k.Kinds):
		f.tl.CycleKind()
	case key.Matches(msg, k.Pause):
		f.tl.TogglePause()
	case key.Matches(msg, k.Up):
		f.tl.Scroll(1)
	case key.Matches(msg, k.Down):
		f.tl.Scroll(-1)
	case key.Matches(msg, k.PageUp):
		f.tl.Scroll(10)
	case key.Matches(msg, k.PageDown):
		f.tl.Scroll(-10)
	case key.Matches(msg, k.Top):
		f.tl.Top()
	case key.Matches(msg, k.Bottom):
		f.tl.Follow()
	default:
		return false
	}
	return true
}
