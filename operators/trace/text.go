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
		if e.Bool(FieldInitial) {
			s = "(initial list)"
		}
		if c := e.Str(FieldChange); c != "" {
			s = "(" + c + ")"
		}
		if m := e.Str(FieldMappedTo); m != "" {
			s += " → " + m
		}
		if e.Bool(FieldFiltered) {
			s += " filtered: not queued"
		}
		return strings.TrimSpace(s)
	case QueueAdd:
		s := "depth " + e.Str(FieldDepth)
		if e.Bool(FieldCoalesced) {
			s += ", coalesced"
		}
		return s
	case QueueGet, QueueDone:
		return "depth " + e.Str(FieldDepth)
	case QueueRequeue:
		return fmt.Sprintf("%s, after %s (retry %s)", e.Str(FieldReason), ms(FieldAfterMS), e.Str(FieldRetries))
	case ReconcileStart:
		s := "cause: " + e.Str(FieldCause)
		if ev := e.Str(FieldCauseEvent); ev != "" {
			s = "cause: " + ev
		}
		if n, _ := e.Num(FieldCauses); n > 1 {
			s += fmt.Sprintf(" (+%d more)", int(n)-1)
		}
		return s
	case ReconcileEnd:
		s := fmt.Sprintf("%s in %s, %s", e.Str(FieldResult), ms(FieldDurationMS), e.Str(FieldChanged))
		if st := e.Str(FieldStatus); st != "" {
			s += ", status " + st
		}
		if er := e.Str(FieldError); er != "" {
			s += ": " + er
		}
		return s
	case APIRequest:
		return fmt.Sprintf("%s %s → %s in %s", e.Str(FieldVerb), e.Str(FieldResource), e.Str(FieldCode), ms(FieldLatencyMS))
	case APIWatchEvent:
		typ := e.Str(FieldType)
		if typ == "" {
			typ = "unreadable event"
		}
		return "watch " + e.Str(FieldResource) + " delivered " + typ
	case Kubectl:
		return fmt.Sprintf("kubectl %s → exit %s in %s", e.Str(FieldVerb), e.Str(FieldCode), ms(FieldDurationMS))
	case LeaderAcquired, LeaderLost, LeaderObserved:
		s := e.Str(FieldIdentity)
		if r := e.Str(FieldReason); r != "" {
			s += " (" + r + ")"
		}
		return s
	case GCCollected:
		return "collected by GC: owner " + e.Str(FieldOwner) + " is gone"
	case DriftDetected:
		return "drift: " + e.Str(FieldWhat)
	case Handover:
		return e.Str(FieldPath) + " changed owners: " + e.Str(FieldFrom) + " → " + e.Str(FieldTo)
	case DriftRepaired:
		return fmt.Sprintf("repaired %s in %s", e.Str(FieldWhat), ms(FieldLatencyMS))
	case Converged:
		return "converged in " + ms(FieldLatencyMS)
	case Finalizer:
		if e.Str(FieldAction) == FinalizerRemoved {
			return "cleaned up; finalizer " + e.Str(FieldFinalizer) + " removed"
		}
		return "finalizer " + e.Str(FieldFinalizer) + " " + e.Str(FieldAction)
	case EchoDeleting:
		return "deletion waits for finalizers: " + e.Str(FieldFinalizers)
	case EchoDeleted:
		return "gone after waiting " + ms(FieldWaitedMS)
	case ProcessStart:
		return "started, pid " + e.Str(FieldPID)
	case ProcessExit:
		s := "exited, pid " + e.Str(FieldPID)
		if sig := e.Str(FieldSignal); sig != "" {
			s += ", " + sig
		} else if code := e.Str(FieldCode); code != "" {
			s += ", code " + code
		}
		if e.Bool(FieldRemoved) {
			return s + ", removed for good"
		}
		return s + ", restart in " + e.Str(FieldBackoffMS) + "ms"
	case ProcessPause:
		return "frozen (SIGSTOP), pid " + e.Str(FieldPID)
	case ProcessResume:
		return "let go on (SIGCONT), pid " + e.Str(FieldPID)
	case Malformed:
		return fmt.Sprintf("malformed trace line #%s: %q", e.Str(FieldCount), e.Str(FieldLine))
	case Dropped:
		return e.Str(FieldCount) + " events dropped"
	case Log:
		return e.Str(FieldMsg)
	case Act:
		s := "autoplay: "
		if e.Str(FieldVia) == ViaCommand {
			s = "rlab do: "
		}
		s += e.Str(FieldAction)
		if st := e.Str(FieldStyle); st != "" {
			s += " (" + st + ")"
		}
		return s
	case FaultSet:
		if e.Bool(FieldOn) {
			return "fault on: " + e.Str(FieldSpec)
		}
		return "fault off: " + e.Str(FieldSpec)
	case FaultInjected:
		return e.faultSummary(ms(FieldDelayMS))
	case ClientLimits:
		if q, _ := e.Num(FieldQPS); q < 0 {
			return "client-side rate limit: none (left to the apiserver)"
		}
		return "client-side rate limit: " + e.Str(FieldQPS) + " req/s, burst " + e.Str(FieldBurst)
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

// faultSummary says what a fault did to one request or watch event.
func (e Event) faultSummary(delay string) string {
	req := e.Str(FieldVerb) + " " + e.Str(FieldResource)
	ev := "watch event " + e.Str(FieldType) + " of " + e.Str(FieldResource)
	switch e.Str(FieldFault) {
	case "stale":
		return "held " + ev + " " + delay + " (stale view)"
	case "unobserved":
		return "dropped " + ev + ": a later event of the object replaces it (unobserved state)"
	case "conflict":
		return "answered " + req + " with 409 Conflict (injected)"
	case "error":
		return "answered " + req + " with " + e.Str(FieldCode) + " (injected)"
	case "latency", "lease":
		return "delayed " + req + " " + delay + " (" + e.Str(FieldFault) + ")"
	case "crash":
		return "killed the replica as its " + req + " succeeded, before it saw the answer (crash after write)"
	case "disconnect":
		return "closed a watch of " + e.Str(FieldResource) + " mid-flight (watch disconnect)"
	}
	return e.Str(FieldFault) + " " + req
}
