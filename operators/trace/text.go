package trace

import (
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
	ms := func(k string) string {
		v, ok := e.Num(k)
		if !ok {
			return "?"
		}
		return fmt.Sprintf("%.1fms", v)
	}
	switch e.Kind {
	case InformerAdd, InformerUpdate, InformerDelete:
		s := ""
		if e.Str("initial") == "true" {
			s = "(initial list)"
		}
		if c := e.Str("change"); c != "" {
			s = "(" + c + ")"
		}
		if m := e.Str("mapped_to"); m != "" {
			s += " → " + m
		}
		return strings.TrimSpace(s)
	case QueueAdd:
		s := "depth " + e.Str("depth")
		if e.Str("coalesced") == "true" {
			s += ", coalesced"
		}
		return s
	case QueueGet, QueueDone:
		return "depth " + e.Str("depth")
	case QueueRequeue:
		return fmt.Sprintf("%s, after %s (retry %s)", e.Str("reason"), ms("after_ms"), e.Str("retries"))
	case ReconcileStart:
		s := "cause: " + e.Str("cause")
		if ev := e.Str("cause_event"); ev != "" {
			s = "cause: " + ev
		}
		if n, _ := e.Num("causes"); n > 1 {
			s += fmt.Sprintf(" (+%d more)", int(n)-1)
		}
		return s
	case ReconcileEnd:
		s := fmt.Sprintf("%s in %s, %s", e.Str("result"), ms("duration_ms"), e.Str("changed"))
		if st := e.Str("status"); st != "" {
			s += ", status " + st
		}
		if er := e.Str("error"); er != "" {
			s += ": " + er
		}
		return s
	case APIRequest:
		return fmt.Sprintf("%s %s → %s in %s", e.Str("verb"), e.Str("resource"), e.Str("code"), ms("latency_ms"))
	case Kubectl:
		return fmt.Sprintf("kubectl %s → exit %s in %s", e.Str("verb"), e.Str("code"), ms("duration_ms"))
	case LeaderAcquired, LeaderLost, LeaderObserved:
		s := e.Str("identity")
		if r := e.Str("reason"); r != "" {
			s += " (" + r + ")"
		}
		return s
	case GCCollected:
		return "collected by GC: owner " + e.Str("owner") + " is gone"
	case DriftDetected:
		return "drift: " + e.Str("what")
	case DriftRepaired:
		return fmt.Sprintf("repaired %s in %s", e.Str("what"), ms("latency_ms"))
	case Converged:
		return "converged in " + ms("latency_ms")
	case Finalizer:
		if e.Str("action") == "removed" {
			return "cleaned up; finalizer " + e.Str("finalizer") + " removed"
		}
		return "finalizer " + e.Str("finalizer") + " " + e.Str("action")
	case EchoDeleting:
		return "deletion waits for finalizers: " + e.Str("finalizers")
	case EchoDeleted:
		return "gone after waiting " + ms("waited_ms")
	case ProcessStart:
		return "started, pid " + e.Str("pid")
	case ProcessExit:
		s := "exited, pid " + e.Str(FieldPID)
		if sig := e.Str(FieldSignal); sig != "" {
			s += ", " + sig
		} else if code := e.Str(FieldCode); code != "" {
			s += ", code " + code
		}
		if e.Str(FieldRemoved) == "true" {
			return s + ", removed for good"
		}
		return s + ", restart in " + e.Str(FieldBackoffMS) + "ms"
	case ProcessPause:
		return "frozen (SIGSTOP), pid " + e.Str(FieldPID)
	case ProcessResume:
		return "let go on (SIGCONT), pid " + e.Str(FieldPID)
	case Malformed:
		return fmt.Sprintf("malformed trace line #%s: %q", e.Str("count"), e.Str("line"))
	case Dropped:
		return e.Str("count") + " events dropped"
	case Log:
		return e.Str("msg")
	}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+e.Str(k))
	}
	return strings.Join(parts, " ")
}
