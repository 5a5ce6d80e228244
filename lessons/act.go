package lessons

import (
	"slices"
	"strings"
	"time"

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

// note records an act at t that concerns styles (none: every style).
func (a *Acts) note(t time.Time, styles ...style.Style) {
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

// merge adds the acts of b that came first.
func (a *Acts) merge(b Acts) {
	if !b.First.IsZero() {
		a.note(b.First)
	}
	for st, t := range b.By {
		a.note(t, st)
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
			a.note(e.Time, ExpandStyle(trace.As[trace.Action](e).Style)...)
		case trace.ProcessExit:
			// Killed by a signal: a person's kill, or rlab's. An operator
			// that exits on its own (a lost Lease, an error) says a code.
			if trace.As[trace.Process](e).Signal != "" {
				a.note(e.Time, style.FromSource(e.Object))
			}
		case trace.LeaderLost:
			// Released on the way out: the replica was told to stop.
			if trace.As[trace.Leader](e).Reason == trace.ReasonReleased {
				a.note(e.Time, style.FromSource(e.Source))
			}
		case trace.Handover:
			// Someone other than the style's operator took a field of its
			// Deployment: a hand's write, seen at once (drift is confirmed
			// only once it has stood a while, and a fight never stands).
			if st := styleOfNS(e.Namespace); st != "" && e.Source == trace.SourceWorld &&
				!slices.Contains(strings.Split(trace.As[trace.Ownership](e).To, ","), st.ManagedBy()) {
				a.note(e.Time, st)
			}
		case trace.EchoDeleting, trace.EchoDeleted, trace.DriftDetected:
			// An Echo with no finalizer goes at once: the world sees it
			// deleted, never deleting.
			if e.Source == trace.SourceWorld {
				a.note(e.Time, styleOfNS(e.Namespace))
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
				a.note(ev.Edited, st)
			}
		}
		if view.ConfigMapEdited.After(began) {
			a.note(view.ConfigMapEdited, st)
		}
	}
	return a
}

// Gated says whether the step's check waits for the student to act: it has
// an action that leaves a trace. A step that only shows something, or whose
// action is a request the apiserver refuses (nothing changes), is checked
// from the moment it is shown.
//
// A step graded by rlab check's checks (operator_check) is not gated
// either: the student's act is saving their operator's file, which the
// operator picks up by re-executing itself, leaving no trace; the checks
// judge the operator as it runs, whenever that was.
func (s *Step) Gated() bool {
	if s.Action == nil || len(s.Action.Play) == 0 {
		return false
	}
	if s.Check != nil {
		for _, c := range s.Check.Conds {
			if c.Kind == condOperatorCheck {
				return false
			}
		}
	}
	for _, op := range s.Action.Play {
		if op.Args.Str("expect_error") == "" && !traceless[op.Name] {
			return true
		}
	}
	return false
}

// traceless are the actions a student does by hand that neither the trace
// nor the world shows: a Role edited with kubectl (the world does not
// watch Roles), an annotation (the world sees an Echo edited when its
// generation changes, and metadata does not change it). A step whose
// action is only these is checked from the moment it is shown; what it
// checks cannot hold before the act anyway.
//
// A request the world cannot see is still seen by the student's proxy when
// it goes through `rlab env`'s kubeconfig (check you_asked), but not when a
// student uses a kubeconfig of their own: the stale update of lesson 7 and
// the review of a ServiceAccount's rights in lesson 10 and the read of
// managedFields in lesson 14 are not gated either, nor lesson 16's
// discovery, reads and admission policy (the world watches no policies).
var traceless = map[string]bool{"role_verbs": true, "role_reset": true, "annotate": true,
	"stale_update": true, "rules_review": true, "get_deployment": true,
	"api_resources": true, "explain": true, "get_echo": true, "apply_policy": true, "delete_policy": true}
