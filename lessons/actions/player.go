package actions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/checks"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/world"
)

// Player plays lessons against a running sandbox: it performs the steps'
// actions (autoplay) and evaluates their checks over the world model and
// the trace events seen since each step began.
type Player struct {
	sb  *sandbox.Sandbox
	col *bus.Collector
	// Poll is how often a check is evaluated while it waits.
	Poll time.Duration

	mu     sync.Mutex
	events []trace.Event                // since the current step began
	byKind map[trace.Kind][]trace.Event // the same, by kind
	began  time.Time                    // the step's window: events before it are dropped
	shown  time.Time                    // when the step was shown (Begin)
	acts   checks.Acts                  // the acts found since, merged as they come
	// renewed is, by replica ("clientgo/a"), when it last renewed its
	// style's Lease (a successful update through its proxy, or the Lease's
	// renewTime when a step was shown); kept across steps.
	renewed map[string]time.Time
	// orphans are the Deployments with no owner when the step was shown:
	// one gone is an act (nobody but a person deletes them; the world has
	// no event for it).
	orphans map[style.Style][]string
	// sets are the sets of Echoes (prefix-001 …) whose creations converged,
	// each style's last batch of each prefix; kept across steps, so that a
	// step compares its set with an earlier one (echoes_converged's
	// faster_than).
	sets map[checks.SetKey]world.Batch
	seq  int // annotation values, so every write changes the Echo
	// grading holds a token while rlab check's checks run on an operator.
	grading chan struct{}
	// via says who asks for the actions: trace.ViaPlay, or ViaCommand for
	// an Actor's.
	via string
}

// NewPlayer subscribes to the sandbox's trace. Close it when done.
func NewPlayer(sb *sandbox.Sandbox) *Player {
	p := &Player{sb: sb, Poll: 100 * time.Millisecond, grading: make(chan struct{}, 1), via: trace.ViaPlay}
	p.col = sb.Bus().Collect(1<<16, func(evs []trace.Event, _ int) {
		p.mu.Lock()
		p.noteSets(evs)
		p.keep(evs)
		p.mu.Unlock()
	})
	return p
}

// Close stops recording.
func (p *Player) Close() { p.col.Close() }

// Begin starts a step: events from now on are the step's, and the Lease
// holders of now are the ones a new leader is compared with.
func (p *Player) Begin() (began time.Time, holders map[style.Style]string) {
	// Whatever is pending was published before the step began: it goes to
	// the step before (its renewals are kept) and is dropped with it.
	p.col.Flush()
	now := time.Now()
	p.mu.Lock()
	p.events, p.byKind, p.began, p.shown, p.acts = nil, map[trace.Kind][]trace.Event{}, now, now, checks.Acts{}
	p.mu.Unlock()
	holders = map[style.Style]string{}
	orphans := map[style.Style][]string{}
	sn := p.sb.World().Snapshot()
	for _, st := range p.sb.Styles() {
		ns := sn.Style(st)
		if ns == nil {
			continue
		}
		if ns.Lease != nil {
			holders[st] = ns.Lease.Holder
			if _, r, _, ok := style.ParseIdentity(ns.Lease.Holder); ok && !ns.Lease.Renewed.IsZero() {
				p.mu.Lock()
				p.noteRenewal(st.Source(r), ns.Lease.Renewed)
				p.mu.Unlock()
			}
		}
		for _, d := range ns.Orphans {
			orphans[st] = append(orphans[st], d.Name)
		}
	}
	p.mu.Lock()
	p.orphans = orphans
	p.mu.Unlock()
	return now, holders
}

// View is what the checks see now. acted is when autoplay's action ended;
// zero when the student acts by hand: then the window opens at the first
// act found after the step was shown (see act.go), and nothing from before
// it counts.
func (p *Player) View(began, acted time.Time, holders map[style.Style]string) checks.View {
	// Take what the bus holds first, so nothing published before now is missed.
	p.col.Flush()
	sn := p.sb.World().Snapshot()
	p.mu.Lock()
	renewed := maps.Clone(p.renewed)
	found := checks.FindActs(p.shown, p.events, sn, p.styleOfNamespace)
	for st, names := range p.orphans {
		if checks.OrphansGone(sn.Style(st), names) {
			found.Note(time.Now(), st)
		}
	}
	p.acts.Merge(found)
	acts := p.acts
	if acted.IsZero() && !acts.First.IsZero() {
		acted = acts.First
		// The operators may see an edit a little before the world does.
		p.openAt(acted.Add(-checks.WorldLag))
	}
	// No copies: keep only appends, so the first len elements never change
	// (an append past cap moves to a new array; Begin and openAt start new
	// ones).
	sets := maps.Clone(p.sets)
	events := p.events[:len(p.events):len(p.events)]
	byKind := make(map[trace.Kind][]trace.Event, len(p.byKind))
	for k, l := range p.byKind {
		byKind[k] = l[:len(l):len(l)]
	}
	p.mu.Unlock()
	replicas := p.sb.Operators().ReplicaStatuses()
	cut := map[string]string{}
	for _, r := range replicas {
		if px := p.sb.Faults().Proxy(r.Name); px != nil {
			switch {
			case px.Mode() != proxy.Normal:
				cut[r.Name] = px.Mode().String()
			case px.Latency() > 0:
				cut[r.Name] = "latency " + px.Latency().String()
			case len(px.Faults()) > 0:
				var on []string
				for _, f := range px.Faults() {
					on = append(on, f.String())
				}
				cut[r.Name] = "fault " + strings.Join(on, " ")
			}
		}
	}
	return checks.View{
		Snapshot: sn,
		Events:   events,
		Began:    began, Acted: acted, Acts: acts, Now: time.Now(),
		Holders:  holders,
		Renewed:  renewed,
		Replicas: replicas,
		Cut:      cut,
		ByKind:   byKind,
		Sets:     sets,
	}
}

// noteSets folds the world's reports of new Echoes converged into the
// batches of their sets, by the name's prefix (before its last "-"). Called
// once per event, with p.mu held.
func (p *Player) noteSets(evs []trace.Event) {
	for _, e := range evs {
		created, ok := world.CreationConverged(e)
		if !ok {
			continue
		}
		name := trace.As[trace.Convergence](e).Echo
		i := strings.LastIndexByte(name, '-')
		if i <= 0 {
			continue
		}
		k := checks.SetKey{Style: style.FromNamespace(e.Namespace), Prefix: name[:i]}
		b := p.sets[k]
		if !b.Takes(created) {
			b = world.Batch{} // the set made again: a new batch
		}
		b.Add(created, e.Time)
		if p.sets == nil {
			p.sets = map[checks.SetKey]world.Batch{}
		}
		p.sets[k] = b
	}
}

// openAt drops the step's events from before t: the window opens there.
// p.mu is held.
func (p *Player) openAt(t time.Time) {
	if !t.After(p.began) {
		return
	}
	p.began = t
	old := p.events
	p.events, p.byKind = nil, map[trace.Kind][]trace.Event{}
	p.keep(old)
}

// styleOfNamespace is the style whose namespace ns is, "" if none.
func (p *Player) styleOfNamespace(ns string) style.Style {
	for _, st := range p.sb.Styles() {
		if p.sb.Namespace(st) == ns {
			return st
		}
	}
	return ""
}

// noteRenewals notes the Lease renewals among evs: a leader's successful
// update of its Lease, through its proxy. Called with p.mu held.
func (p *Player) noteRenewals(evs []trace.Event) {
	for _, e := range evs {
		if e.IsLeaseRenewal() {
			p.noteRenewal(strings.TrimPrefix(e.Source, "proxy/"), e.Time)
		}
	}
}

// noteRenewal notes that replica renewed its Lease at t. Called with p.mu
// held.
func (p *Player) noteRenewal(replica string, t time.Time) {
	if p.renewed == nil {
		p.renewed = map[string]time.Time{}
	}
	if t.After(p.renewed[replica]) {
		p.renewed[replica] = t
	}
}

// keep records the events of the current step, and the renewals among
// them whatever the step. p.mu is held.
func (p *Player) keep(evs []trace.Event) {
	p.noteRenewals(evs) // whatever the step's window
	if p.byKind == nil {
		p.byKind = map[trace.Kind][]trace.Event{}
	}
	for _, e := range evs {
		if !e.Time.Before(p.began) {
			p.events = append(p.events, e)
			p.byKind[e.Kind] = append(p.byKind[e.Kind], e)
		}
	}
}

// Await evaluates c until it holds (for c.Hold if set), ctx ends, or it can
// never pass. tick, if not nil, gets every outcome.
func (p *Player) Await(ctx context.Context, c *lessons.Check, began, acted time.Time, holders map[style.Style]string, tick func(checks.Outcome)) (checks.Outcome, error) {
	t := time.NewTicker(p.Poll)
	defer t.Stop()
	// The student's operator is graded in the background meanwhile; its
	// runs end (and clean up) before Await returns.
	gctx, stopGrading := context.WithCancel(ctx)
	g := p.grade(gctx, c)
	defer func() {
		stopGrading()
		g.wg.Wait()
	}()
	var holding time.Time
	var last checks.Outcome
	for {
		v := p.View(began, acted, holders)
		v.Grades = g.snapshot()
		switch {
		case c.Gated && v.Acted.IsZero():
			// Nothing counts, and nothing can fail, before the act.
			last = checks.Outcome{Detail: waitingForAct}
		case v.Acted.IsZero():
			// Not gated: measured from when the step was shown.
			v.Acted = began
			fallthrough
		default:
			last = checks.Eval(c, v)
		}
		if tick != nil {
			tick(last)
		}
		switch {
		case last.Final:
			return last, errors.New("can no longer pass: " + last.Detail)
		case !last.OK:
			holding = time.Time{}
		case c.Hold == 0:
			return last, nil
		case holding.IsZero():
			holding = time.Now()
		case time.Since(holding) >= c.Hold:
			return last, nil
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-t.C:
		}
	}
}

// waitingForAct is the detail of a gated check before the student acted.
const waitingForAct = "waiting for you to act"

// StepResult is how one autoplayed step went.
type StepResult struct {
	Took   time.Duration
	Detail string
}

// PlayStep autoplays one step: its action, then its check within its deadline.
func (p *Player) PlayStep(ctx context.Context, s *lessons.Step) (StepResult, error) {
	began, holders := p.Begin()
	if s.Action != nil {
		for _, op := range s.Action.Play {
			if err := p.Do(ctx, op); err != nil {
				return StepResult{Took: time.Since(began)}, fmt.Errorf("%s (line %d): %w", op.Name, op.Line, err)
			}
		}
	}
	acted := time.Now()
	if s.Check == nil {
		return StepResult{Took: time.Since(began)}, nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.Check.Within)
	defer cancel()
	out, err := p.Await(cctx, s.Check, began, acted, holders, nil)
	res := StepResult{Took: time.Since(began), Detail: out.Detail}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("check not passed within %s: %s", s.Check.Within, out.Detail)
		}
		return res, err
	}
	return res, nil
}

// Tail is the step's last n events, but for the Lease renewals that fill
// any quiet moment.
func (p *Player) Tail(n int) []trace.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []trace.Event
	for i := len(p.events) - 1; i >= 0 && len(out) < n; i-- {
		if e := p.events[i]; !e.IsLease() {
			out = append(out, e)
		}
	}
	slices.Reverse(out)
	return out
}
