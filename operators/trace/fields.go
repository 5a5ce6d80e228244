package trace

import (
	"fmt"
	"reflect"
)

// Field names: every producer (the Go operators, the bash loop, the proxies,
// the world observer, the supervisor) writes these keys and every consumer
// (stats, timeline, lessons) reads them back through these constants, so a
// key is spelled once. Schema says which kind carries which.
const (
	FieldResource    = "resource"    // "Echo", "Deployment", "ConfigMap" (informer); "deployments" (api.request, api.watch_event)
	FieldInitial     = "initial"     // informer.add of an object listed at start
	FieldChange      = "change"      // informer.update: "spec" (generation moved) or "status"
	FieldMappedTo    = "mapped_to"   // "Echo/hello": the owner a Deployment event was mapped to; "Echo/a, Echo/b": the Echoes a ConfigMap event was mapped to
	FieldFiltered    = "filtered"    // informer.*: a predicate kept it from the queue (true)
	FieldKey         = "key"         // workqueue key "namespace/name"
	FieldDepth       = "depth"       // workqueue depth after the operation
	FieldCoalesced   = "coalesced"   // queue.add of a key already waiting
	FieldReason      = "reason"      // queue.requeue: "error", "after"; leader.lost: why
	FieldAfterMS     = "after_ms"    // queue.requeue backoff
	FieldRetries     = "retries"     // queue.requeue: retries so far
	FieldID          = "id"          // reconcile call number within the replica
	FieldCause       = "cause"       // reconcile.start: one of the Cause* values
	FieldCauseEvent  = "cause_event" // "UPDATE Deployment/echo-hello → Echo/hello"
	FieldCauses      = "causes"      // how many enqueues one reconcile answers
	FieldResult      = "result"      // reconcile.end: ResultOK, ResultError
	FieldDurationMS  = "duration_ms" // reconcile.end, kubectl
	FieldChanged     = "changed"     // reconcile.end: ChangedNone, "created", "updated"
	FieldStatus      = "status"      // reconcile.end: status.ready written, "2/2"
	FieldError       = "error"       // reconcile.end with ResultError: the error as returned
	FieldVerb        = "verb"        // api.request: "get"; kubectl: "get echoes"
	FieldCode        = "code"        // api.request HTTP code; kubectl and process exit code
	FieldLatencyMS   = "latency_ms"  // api.request; drift.repaired; echo.converged
	FieldUserAgent   = "user_agent"  // api.request
	FieldUnchanged   = "unchanged"   // api.request: an update or patch the apiserver answered without changing the object (true)
	FieldDiffered    = "differed"    // api.request, unchanged update: the fields sent and answered differently, comma-separated
	FieldIntervalS   = "interval_s"  // poll.tick
	FieldIdentity    = "identity"    // leader.*: the holder's identity, "clientgo-a-4121"
	FieldPrevious    = "previous"    // leader.observed: the holder before
	FieldLease       = "lease"       // leader.observed: the Lease name
	FieldTransitions = "transitions" // leader.observed: the Lease's leaseTransitions
	FieldOwner       = "owner"       // gc.collected: "Echo/hello"
	FieldWhat        = "what"        // drift.*: DriftReplicas, DriftMessage, DriftImage, DriftOwner, DriftDeleted
	FieldEcho        = "echo"        // drift.*, echo.converged: the Echo's name
	FieldGeneration  = "generation"  // echo.converged
	FieldCreated     = "created"     // echo.converged of a new Echo, not an edit: true
	FieldAction      = "action"      // finalizer: "added", "removed"; rlab.act: the lesson action, "partition_leader"
	FieldFinalizer   = "finalizer"   // finalizer: its name
	FieldPath        = "path"        // field.handover: the field, "spec.replicas"
	FieldFrom        = "from"        // field.handover: the field managers that owned it, comma-separated
	FieldTo          = "to"          // field.handover: those that own it now
	FieldFinalizers  = "finalizers"  // echo.deleting: the finalizers that hold it, comma-separated
	FieldWaitedMS    = "waited_ms"   // echo.deleted
	FieldPID         = "pid"         // process.*
	FieldRestarts    = "restarts"    // process.*
	FieldBackoffMS   = "backoff_ms"  // process.exit: wait before the restart
	FieldSignal      = "signal"      // process.exit: the signal that ended it
	FieldRemoved     = "removed"     // process.exit of a replica that is not restarted
	FieldLine        = "line"        // trace.malformed
	FieldCount       = "count"       // trace.malformed, trace.dropped
	FieldMsg         = "msg"         // log
	FieldQPS         = "qps"         // client.limits: requests per second (< 0: no client-side limit)
	FieldBurst       = "burst"       // client.limits
	FieldType        = "type"        // api.watch_event: "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"; "" if unreadable
	FieldStyle       = "style"       // rlab.act: the action's style argument ("clientgo", "go", "all"), if it has one
	FieldVia         = "via"         // rlab.act: ViaPlay or ViaCommand
	FieldFault       = "fault"       // fault.set, fault.injected: the fault's kind ("stale", "conflict", …)
	FieldSpec        = "spec"        // fault.set: the fault as typed ("stale:2s", "conflict,p=0.5")
	FieldOn          = "on"          // fault.set: true when turned on, false when off
	FieldDelayMS     = "delay_ms"    // fault.injected: how long a request or watch event was held
)

// Values of FieldResult and FieldChanged.
const (
	ResultOK    = "ok"
	ResultError = "error"
	ChangedNone = "none"
)

// Schema lists the keys each kind may carry, derived from its payload's
// json tags (payload.go). A producer that writes a key not listed here (a
// typo in bash) fails TestSchema or the bash operator's schema test.
var Schema = schema()

func schema() map[Kind][]string {
	m := make(map[Kind][]string, len(payloadOf))
	for k := range payloadOf {
		keys := []string{}
		for _, f := range fieldsFor(k) {
			keys = append(keys, f.key)
		}
		m[k] = keys
	}
	return m
}

// CheckSchema returns an error if e's kind is unknown, its payload is not the
// one its kind carries, or (decoded from a line) it carried a key its kind
// does not or a value that does not fit.
func CheckSchema(e Event) error {
	want, ok := payloadOf[e.Kind]
	if !ok {
		return fmt.Errorf("kind %q is not in the trace schema", e.Kind)
	}
	if e.Payload != nil && reflect.TypeOf(e.Payload) != reflect.TypeOf(want) {
		return fmt.Errorf("%s: payload %T, want %T", e.Kind, e.Payload, want)
	}
	if len(e.offSchema) > 0 {
		return fmt.Errorf("%s: field %q is not in the trace schema (allowed: %v)", e.Kind, e.offSchema[0], Schema[e.Kind])
	}
	return nil
}

// Values of FieldWhat: how a Deployment differs from what its Echo asks for.
const (
	DriftReplicas = "replicas"
	DriftMessage  = "message"
	DriftImage    = "image"
	DriftOwner    = "owner"
	DriftDeleted  = "deleted"
)

// Values of FieldReason: why a key was requeued (queue.requeue) or a Lease
// given up (leader.lost).
const (
	ReasonError    = "error"    // the reconcile failed: retried after a backoff
	ReasonAfter    = "after"    // the reconcile asked for it (RequeueAfter)
	ReasonLost     = "lost"     // the Lease was taken while the leader still ran
	ReasonReleased = "released" // the leader gave it up on a graceful stop
)

// Values of FieldVia: who asked rlab to act.
const (
	ViaPlay    = "play"    // autoplay: a lesson step played for the student
	ViaCommand = "command" // the student (or a script) typed rlab do
	ViaKey     = "key"     // the student pressed the key a lesson step names
)

// Values of FieldAction of a finalizer event.
const (
	FinalizerAdded   = "added"
	FinalizerRemoved = "removed"
)
