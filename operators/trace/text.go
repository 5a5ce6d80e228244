package trace

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Line is the event as one readable timeline line, e.g.
//
//	09:41:03.211 clientgo/a      reconcile.end    Echo/hello ok in 3.2ms, updated, status 2/2
func (e Event) Line() string {
	obj := e.Object
	if e.Namespace != "" && obj != "" {
		obj = e.Namespace + "/" + obj
	}
	return fmt.Sprintf("%s %-16s %-16s %s %s", e.Time.Format("15:04:05.000"), e.Source, e.Kind, obj, e.Summary())
}

// Summary says the event's fields in words, for the timeline.
func (e Event) Summary() string {
	ms := func(v float64) string { return fmt.Sprintf("%.1fms", v) }
	str := func(v any) string { return fmt.Sprint(v) }
	if _, ok := e.Payload.(Unknown); ok {
		return e.fieldsText()
	}
	switch e.Kind {
	case InformerAdd, InformerUpdate, InformerDelete:
		p, _ := e.Informer()
		s := ""
		if p.Initial {
			s = "(initial list)"
		}
		if p.Change != "" {
			s = "(" + p.Change + ")"
		}
		if p.MappedTo != "" {
			s += " → " + p.MappedTo
		}
		if p.Filtered {
			s += " filtered: not queued"
		}
		return strings.TrimSpace(s)
	case QueueAdd:
		p, _ := e.Queue()
		s := "depth " + str(p.Depth)
		if p.Coalesced {
			s += ", coalesced"
		}
		return s
	case QueueGet, QueueDone:
		p, _ := e.Queue()
		return "depth " + str(p.Depth)
	case QueueRequeue:
		p, _ := e.Queue()
		return fmt.Sprintf("%s, after %s (retry %d)", p.Reason, ms(p.AfterMS), p.Retries)
	case ReconcileStart:
		p, _ := e.Reconcile()
		s := "cause: " + p.Cause
		if p.CauseEvent != "" {
			s = "cause: " + p.CauseEvent
		}
		if p.Causes > 1 {
			s += fmt.Sprintf(" (+%d more)", p.Causes-1)
		}
		return s
	case ReconcileEnd:
		p, _ := e.Reconcile()
		s := fmt.Sprintf("%s in %s, %s", p.Result, ms(p.DurationMS), p.Changed)
		if p.Status != "" {
			s += ", status " + p.Status
		}
		if p.Error != "" {
			s += ": " + p.Error
		}
		return s
	case APIRequest:
		p, _ := e.Request()
		return fmt.Sprintf("%s %s → %d in %s", p.Verb, p.Resource, p.Code, ms(p.LatencyMS))
	case APIWatchEvent:
		p, _ := e.WatchEvent()
		typ := p.Type
		if typ == "" {
			typ = "unreadable event"
		}
		return "watch " + p.Resource + " delivered " + typ
	case Kubectl:
		p, _ := e.Command()
		return fmt.Sprintf("kubectl %s → exit %d in %s", p.Verb, p.Code, ms(p.DurationMS))
	case LeaderAcquired, LeaderLost, LeaderObserved:
		p, _ := e.Leader()
		s := p.Identity
		if p.Reason != "" {
			s += " (" + p.Reason + ")"
		}
		return s
	case GCCollected:
		p, _ := e.GC()
		return "collected by GC: owner " + p.Owner + " is gone"
	case DriftDetected:
		p, _ := e.Drift()
		return "drift: " + p.What
	case Handover:
		p, _ := e.Ownership()
		return p.Path + " changed owners: " + p.From + " → " + p.To
	case DriftRepaired:
		p, _ := e.Drift()
		return fmt.Sprintf("repaired %s in %s", p.What, ms(p.LatencyMS))
	case Converged:
		p, _ := e.Convergence()
		return "converged in " + ms(p.LatencyMS)
	case Finalizer:
		p, _ := e.FinalizerChange()
		if p.Action == FinalizerRemoved {
			return "cleaned up; finalizer " + p.Finalizer + " removed"
		}
		return "finalizer " + p.Finalizer + " " + p.Action
	case EchoDeleting:
		p, _ := e.Deleting()
		return "deletion waits for finalizers: " + p.Finalizers
	case EchoDeleted:
		p, _ := e.Deleted()
		return "gone after waiting " + ms(p.WaitedMS)
	case ProcessStart:
		p, _ := e.Process()
		return "started, pid " + str(p.PID)
	case ProcessExit:
		p, _ := e.Process()
		s := "exited, pid " + str(p.PID)
		if p.Signal != "" {
			s += ", " + p.Signal
		} else if p.Code != nil {
			s += ", code " + str(*p.Code)
		}
		if p.Removed {
			return s + ", removed for good"
		}
		return s + ", restart in " + str(p.BackoffMS) + "ms"
	case ProcessPause:
		p, _ := e.Process()
		return "frozen (SIGSTOP), pid " + str(p.PID)
	case ProcessResume:
		p, _ := e.Process()
		return "let go on (SIGCONT), pid " + str(p.PID)
	case Malformed:
		p, _ := e.BadLine()
		return fmt.Sprintf("malformed trace line #%d: %q", p.Count, p.Line)
	case Dropped:
		p, _ := e.Loss()
		return str(p.Count) + " events dropped"
	case Log:
		p, _ := e.Message()
		return p.Msg
	case Act:
		p, _ := e.Action()
		s := "autoplay: "
		if p.Via == ViaCommand {
			s = "rlab do: "
		}
		s += p.Action
		if p.Style != "" {
			s += " (" + p.Style + ")"
		}
		return s
	case FaultSet:
		p, _ := e.FaultSwitch()
		if p.On {
			return "fault on: " + p.Spec
		}
		return "fault off: " + p.Spec
	case FaultInjected:
		p, _ := e.Injection()
		return p.summary()
	case ClientLimits:
		p, _ := e.Limits()
		if p.QPS < 0 {
			return "client-side rate limit: none (left to the apiserver)"
		}
		return "client-side rate limit: " + str(p.QPS) + " req/s, burst " + str(p.Burst)
	}
	return e.fieldsText() // poll.tick: "interval_s=5"
}

// fieldsText is the fields as written, "key=value" sorted by key: the
// timeline line of a kind with no words of its own.
func (e Event) fieldsText() string {
	raw, err := encodeFields(e.Kind, e.Payload)
	if err != nil || raw == nil {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := m[k]
		if v == nil {
			v = ""
		}
		parts = append(parts, k+"="+fmt.Sprint(v))
	}
	return strings.Join(parts, " ")
}

// summary says what a fault did to one request or watch event.
func (p Injection) summary() string {
	delay := fmt.Sprintf("%.1fms", float64(p.DelayMS))
	req := p.Verb + " " + p.Resource
	ev := "watch event " + p.Type + " of " + p.Resource
	switch p.Fault {
	case "stale":
		return "held " + ev + " " + delay + " (stale view)"
	case "unobserved":
		return "dropped " + ev + ": a later event of the object replaces it (unobserved state)"
	case "conflict":
		return "answered " + req + " with 409 Conflict (injected)"
	case "error":
		return "answered " + req + " with " + fmt.Sprint(p.Code) + " (injected)"
	case "latency", "lease":
		return "delayed " + req + " " + delay + " (" + p.Fault + ")"
	case "crash":
		return "killed the replica as its " + req + " succeeded, before it saw the answer (crash after write)"
	case "disconnect":
		return "closed a watch of " + p.Resource + " mid-flight (watch disconnect)"
	}
	return p.Fault + " " + req
}
