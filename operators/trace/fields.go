package trace

import (
	"fmt"
	"reflect"
)

// Values of Reconcile.Result and Reconcile.Changed.
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

// Values of Drift.What: how a Deployment differs from what its Echo asks for.
const (
	DriftReplicas = "replicas"
	DriftMessage  = "message"
	DriftImage    = "image"
	DriftOwner    = "owner"
	DriftDeleted  = "deleted"
)

// Values of Queue.Reason and Leader.Reason: why a key was requeued (queue.requeue) or a Lease
// given up (leader.lost).
const (
	ReasonError    = "error"    // the reconcile failed: retried after a backoff
	ReasonAfter    = "after"    // the reconcile asked for it (RequeueAfter)
	ReasonLost     = "lost"     // the Lease was taken while the leader still ran
	ReasonReleased = "released" // the leader gave it up on a graceful stop
)

// Values of Action.Via: who asked rlab to act.
const (
	ViaPlay    = "play"    // autoplay: a lesson step played for the student
	ViaCommand = "command" // the student (or a script) typed rlab do
	ViaKey     = "key"     // the student pressed the key a lesson step names
)

// Values of FinalizerChange.Action.
const (
	FinalizerAdded   = "added"
	FinalizerRemoved = "removed"
)
