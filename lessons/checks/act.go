package checks

import (
	"slices"
	"strings"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/world"
)

// A student acts in another terminal, long after the step was shown, or
// not at all: a step's window opens at the first act the trace or the
// world shows after the step was shown, and nothing before it counts. An
// act is what a person or rlab does to the sandbox, never what the
// operators do on their own:
//
//   - an rlab action (trace.Act): autoplay, a key, or `rlab do`;
//   - a replica killed by a signal (kill -9), or a leader that released its
//     Lease on the way out (kill, SIGTERM): the operators only do that when
//     told to stop;
//   - an Echo created, edited or deleted, as the world saw it;
//   - a ConfigMap added, changed or deleted (echo-defaults, say), other
//     than the operators' registry, as the world saw it;
//   - a Deployment changed by hand (the world's drift.detected, or a
//     field.handover to a field manager that is not the style's operator),
//     or an orphaned one deleted (Player.View: gone since the step was shown).
//
// What leaves no trace (a request the apiserver refused, a read, a Role
// edited, an annotation) is not an act: steps whose action is only that are not gated
// (Step.Gated).

// Acts are the acts found so far in one step's window.
type Acts struct {
	First time.Time                 // the first act of any kind, zero if none
	By    map[style.Style]time.Time // the first act that concerns each style
}

// at is the first act that concerns st, else the first act.
func (a Acts) at(st style.Style) time.Time {
	if t, ok := a.By[st]; ok {
		return t
	}
	return a.First
}

// Note records an act at t that concerns styles (none: every style).
func (a *Acts) Note(t time.Time, styles ...style.Style) {
	if a.First.IsZero() || t.Before(a.First) {
		a.First = t
	}
	if a.By == nil {
		a.By = map[style.Style]time.Time{}
	}
	for _, st := range styles {
		if old, ok := a.By[st]; !ok || t.Before(old) {
			a.By[st] = t
		}
	}
}

// Merge adds the acts of b that came first.
func (a *Acts) Merge(b Acts) {
	if !b.First.IsZero() {
		a.Note(b.First)
	}
	for st, t := range b.By {
		a.Note(t, st)
	}
}

// FindActs looks for acts among the events of a step (those since it was
// shown) and in the world now: Echoes created or edited after began.
// styleOfNS names the style a namespace belongs to ("" if none).
func FindActs(began time.Time, events []trace.Event, sn world.Snapshot, styleOfNS func(string) style.Style) Acts {
	var a Acts
	for _, e := range events {
		if e.Time.Before(began) {
			continue
		}
		switch e.Kind {
		case trace.Act:
			a.Note(e.Time, lessons.ExpandStyle(trace.As[trace.Action](e).Style)...)
		case trace.ProcessExit:
			// Killed by a signal: a person's kill, or rlab's. An operator
			// that exits on its own (a lost Lease, an error) says a code.
			if trace.As[trace.Process](e).Signal != "" {
				a.Note(e.Time, style.FromSource(e.Object))
			}
		case trace.LeaderLost:
			// Released on the way out: the replica was told to stop.
			if trace.As[trace.Leader](e).Reason == trace.ReasonReleased {
				a.Note(e.Time, style.FromSource(e.Source))
			}
		case trace.Handover:
			// Someone other than the style's operator took a field of its
			// Deployment: a hand's write, seen at once (drift is confirmed
			// only once it has stood a while, and a fight never stands).
			if st := styleOfNS(e.Namespace); st != "" && e.Source == trace.SourceWorld &&
				!slices.Contains(strings.Split(trace.As[trace.Ownership](e).To, ","), st.ManagedBy()) {
				a.Note(e.Time, st)
			}
		case trace.EchoDeleting, trace.EchoDeleted, trace.DriftDetected:
			// An Echo with no finalizer goes at once: the world sees it
			// deleted, never deleting.
			if e.Source == trace.SourceWorld {
				a.Note(e.Time, styleOfNS(e.Namespace))
			}
		}
	}
	for ns, view := range sn.Namespaces {
		st := styleOfNS(ns)
		if st == "" {
			continue
		}
		for _, ev := range view.Echoes {
			if ev.Edited.After(began) {
				a.Note(ev.Edited, st)
			}
			if ev.StatusEdited.After(began) {
				a.Note(ev.StatusEdited, st)
			}
		}
		if view.ConfigMapEdited.After(began) {
			a.Note(view.ConfigMapEdited, st)
		}
	}
	return a
}
