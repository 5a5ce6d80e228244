package trace

import (
	"reflect"
	"time"
)

// Payload is what an event carries besides its time, source and object: one
// struct per family of kinds. Its json tags are the keys of the wire format's
// "fields" object (written by the Go operators, the proxies and, by hand, the
// bash loop), so a key is spelled once, in a tag. A field tagged
// `trace:"kind ..."` belongs only to those kinds of its family; Schema is
// derived from these tags.
type Payload interface{ isPayload() }

// Informer is the payload of informer.add, informer.update, informer.delete.
type Informer struct {
	Resource string `json:"resource"`                                 // "Echo", "Deployment", "ConfigMap"
	Initial  bool   `json:"initial" trace:"informer.add"`             // an object listed at start
	Change   string `json:"change,omitempty" trace:"informer.update"` // "spec" (generation moved) or "status"
	MappedTo string `json:"mapped_to,omitempty"`                      // "Echo/hello"; "Echo/a, Echo/b" for a ConfigMap
	Filtered bool   `json:"filtered,omitempty"`                       // a predicate kept it from the queue
}

// Queue is the payload of queue.add, queue.get, queue.done, queue.requeue.
type Queue struct {
	Key        string  `json:"key"`                                      // "namespace/name"
	Depth      int     `json:"depth"`                                    // after the operation
	Coalesced  bool    `json:"coalesced" trace:"queue.add"`              // the key was already waiting
	CauseEvent string  `json:"cause_event,omitempty" trace:"queue.add"`  // what queued it
	Reason     string  `json:"reason,omitempty" trace:"queue.requeue"`   // ReasonError, ReasonAfter
	AfterMS    float64 `json:"after_ms,omitempty" trace:"queue.requeue"` // the backoff
	Retries    int     `json:"retries,omitempty" trace:"queue.requeue"`  // retries so far
}

// Reconcile is the payload of reconcile.start and reconcile.end.
type Reconcile struct {
	ID         int     `json:"id"`                                            // call number within the replica
	Cause      string  `json:"cause,omitempty" trace:"reconcile.start"`       // one of the Cause* values
	CauseEvent string  `json:"cause_event,omitempty" trace:"reconcile.start"` // "UPDATE Deployment/echo-hello → Echo/hello"
	Causes     int     `json:"causes,omitempty" trace:"reconcile.start"`      // how many enqueues it answers
	Result     string  `json:"result,omitempty" trace:"reconcile.end"`        // ResultOK, ResultError
	DurationMS float64 `json:"duration_ms,omitempty" trace:"reconcile.end"`   // how long the call took
	Changed    string  `json:"changed,omitempty" trace:"reconcile.end"`       // ChangedNone, "created", "updated"
	Status     string  `json:"status,omitempty" trace:"reconcile.end"`        // status.ready written, "2/2"
	Error      string  `json:"error,omitempty" trace:"reconcile.end"`         // with ResultError: the error
}

// WatchEvent is the payload of api.watch_event: one event a watch delivered.
type WatchEvent struct {
	Resource string `json:"resource"` // "deployments"
	Type     string `json:"type"`     // "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"; "" if unreadable
}

// Poll is the payload of poll.tick.
type Poll struct {
	IntervalS float64 `json:"interval_s"`
}

// Command is the payload of kubectl: the shell loop ran kubectl.
type Command struct {
	Verb       string  `json:"verb"` // "get echoes"
	Code       int     `json:"code"` // exit code
	DurationMS float64 `json:"duration_ms"`
}

// Leader is the payload of leader.acquired, leader.lost, leader.observed.
type Leader struct {
	Identity    string `json:"identity"`                                      // the holder, "clientgo-a-4121"
	Reason      string `json:"reason,omitempty" trace:"leader.lost"`          // ReasonLost, ReasonReleased
	Previous    string `json:"previous,omitempty" trace:"leader.observed"`    // the holder before
	Transitions int    `json:"transitions,omitempty" trace:"leader.observed"` // the Lease's leaseTransitions
	Lease       string `json:"lease,omitempty" trace:"leader.observed"`       // the Lease's name
}

// GC is the payload of gc.collected: a child vanished after its owner.
type GC struct {
	Owner string `json:"owner"` // "Echo/hello"
}

// Drift is the payload of drift.detected and drift.repaired.
type Drift struct {
	What      string  `json:"what"`                                        // DriftReplicas, DriftMessage …
	Echo      string  `json:"echo"`                                        // the Echo's name
	LatencyMS float64 `json:"latency_ms,omitempty" trace:"drift.repaired"` // detected to repaired
}

// Ownership is the payload of field.handover.
type Ownership struct {
	Path string `json:"path"`           // "spec.replicas"
	From string `json:"from"`           // the field managers that owned it, comma-separated
	To   string `json:"to"`             // those that own it now
	Echo string `json:"echo,omitempty"` // the Echo's name
}

// FinalizerChange is the payload of finalizer.
type FinalizerChange struct {
	Action    string `json:"action"`    // FinalizerAdded, FinalizerRemoved
	Finalizer string `json:"finalizer"` // its name
}

// Deleting is the payload of echo.deleting.
type Deleting struct {
	Finalizers string `json:"finalizers"` // those that hold it, comma-separated
}

// Deleted is the payload of echo.deleted.
type Deleted struct {
	WaitedMS float64 `json:"waited_ms"`
}

// Convergence is the payload of echo.converged.
type Convergence struct {
	LatencyMS  float64 `json:"latency_ms"`
	Generation int64   `json:"generation"`
	Echo       string  `json:"echo"`
	Created    bool    `json:"created,omitempty"` // a new Echo, not an edit
}

// Process is the payload of process.start, process.exit, process.pause,
// process.resume.
type Process struct {
	PID       int    `json:"pid"`
	Restarts  int    `json:"restarts" trace:"process.start process.exit"`
	BackoffMS int64  `json:"backoff_ms,omitempty" trace:"process.exit"` // wait before the restart
	Code      *int   `json:"code,omitempty" trace:"process.exit"`       // exit code; nil if a signal ended it
	Signal    string `json:"signal,omitempty" trace:"process.exit"`     // the signal that ended it
	Removed   bool   `json:"removed,omitempty" trace:"process.exit"`    // not restarted
}

// Limits is the payload of client.limits.
type Limits struct {
	QPS   float64 `json:"qps"` // < 0: no client-side limit
	Burst int     `json:"burst"`
}

// BadLine is the payload of trace.malformed.
type BadLine struct {
	Line  string `json:"line"`
	Count int    `json:"count"` // how many so far
}

// Loss is the payload of trace.dropped.
type Loss struct {
	Count int `json:"count"`
}

// Message is the payload of log.
type Message struct {
	Msg string `json:"msg"`
}

// Action is the payload of rlab.act.
type Action struct {
	Action string `json:"action"`          // the lesson action, "partition_leader"
	Style  string `json:"style,omitempty"` // its style argument, if it has one
	Via    string `json:"via"`             // ViaPlay, ViaCommand, ViaKey
}

// Startup is the payload of rlab.startup: how the sandbox's start-up goes
// on behind the screen, which opens as the apiserver serves.
type Startup struct {
	Done  string `json:"done,omitempty"`  // what is done: "the operators started"
	Next  string `json:"next,omitempty"`  // what is still starting; "" once all is
	Error string `json:"error,omitempty"` // why the start-up failed: the sandbox is of no more use
}

// FaultSwitch is the payload of fault.set.
type FaultSwitch struct {
	Fault string `json:"fault"` // the fault's kind, "stale"
	Spec  string `json:"spec"`  // as typed, "stale:2s"
	On    bool   `json:"on"`
}

// Injection is the payload of fault.injected: what a fault did to one
// request or watch event.
type Injection struct {
	Fault    string `json:"fault"`
	Verb     string `json:"verb,omitempty"`
	Resource string `json:"resource,omitempty"`
	Type     string `json:"type,omitempty"` // of a watch event
	Code     int    `json:"code,omitempty"` // the answer given
	DelayMS  int64  `json:"delay_ms,omitempty"`
	Count    int    `json:"count,omitempty"`
}

// Unknown is the payload of a kind this build does not know (a newer
// recording, a typo in bash): its fields as decoded, kept so the timeline
// can still show them.
type Unknown map[string]any

func (Informer) isPayload()        {}
func (Queue) isPayload()           {}
func (Reconcile) isPayload()       {}
func (Request) isPayload()         {}
func (WatchEvent) isPayload()      {}
func (Poll) isPayload()            {}
func (Command) isPayload()         {}
func (Leader) isPayload()          {}
func (GC) isPayload()              {}
func (Drift) isPayload()           {}
func (Ownership) isPayload()       {}
func (FinalizerChange) isPayload() {}
func (Deleting) isPayload()        {}
func (Deleted) isPayload()         {}
func (Convergence) isPayload()     {}
func (Process) isPayload()         {}
func (Limits) isPayload()          {}
func (BadLine) isPayload()         {}
func (Loss) isPayload()            {}
func (Message) isPayload()         {}
func (Action) isPayload()          {}
func (FaultSwitch) isPayload()     {}
func (Injection) isPayload()       {}
func (Startup) isPayload()         {}
func (Unknown) isPayload()         {}

// payloadOf says which payload each kind carries: every kind has one.
var payloadOf = map[Kind]Payload{
	InformerAdd: Informer{}, InformerUpdate: Informer{}, InformerDelete: Informer{},
	QueueAdd: Queue{}, QueueGet: Queue{}, QueueDone: Queue{}, QueueRequeue: Queue{},
	ReconcileStart: Reconcile{}, ReconcileEnd: Reconcile{},
	APIRequest: Request{}, APIWatchEvent: WatchEvent{},
	PollTick: Poll{}, Kubectl: Command{},
	LeaderAcquired: Leader{}, LeaderLost: Leader{}, LeaderObserved: Leader{},
	GCCollected: GC{}, DriftDetected: Drift{}, DriftRepaired: Drift{},
	Handover: Ownership{}, Finalizer: FinalizerChange{},
	EchoDeleting: Deleting{}, EchoDeleted: Deleted{}, Converged: Convergence{},
	ProcessStart: Process{}, ProcessExit: Process{}, ProcessPause: Process{}, ProcessResume: Process{},
	ClientLimits: Limits{}, Malformed: BadLine{}, Dropped: Loss{}, Log: Message{},
	Act: Action{}, FaultSet: FaultSwitch{}, FaultInjected: Injection{}, StartupStep: Startup{},
}

// Kinds lists every kind rlab knows.
func Kinds() []Kind {
	ks := make([]Kind, 0, len(payloadOf))
	for k := range payloadOf {
		ks = append(ks, k)
	}
	return ks
}

// New is an event of kind with payload p.
func New(t time.Time, source string, kind Kind, ns, object string, p Payload) Event {
	return Event{Time: t, Source: source, Kind: kind, Namespace: ns, Object: object, Payload: p}
}

// payloadAs returns e's payload as a P, and whether e's kind carries a P. An
// event of that kind without a payload reads as the zero P, as an event with
// no fields read before.
func payloadAs[P Payload](e Event) (P, bool) {
	var zero P
	if reflect.TypeOf(payloadOf[e.Kind]) != reflect.TypeOf(zero) {
		return zero, false
	}
	p, _ := e.Payload.(P)
	return p, true
}

// Typed views of an event's payload: ok is false if e's kind carries another.
func (e Event) Informer() (Informer, bool)     { return payloadAs[Informer](e) }
func (e Event) Queue() (Queue, bool)           { return payloadAs[Queue](e) }
func (e Event) Reconcile() (Reconcile, bool)   { return payloadAs[Reconcile](e) }
func (e Event) Request() (Request, bool)       { return payloadAs[Request](e) }
func (e Event) WatchEvent() (WatchEvent, bool) { return payloadAs[WatchEvent](e) }
func (e Event) Poll() (Poll, bool)             { return payloadAs[Poll](e) }
func (e Event) Command() (Command, bool)       { return payloadAs[Command](e) }
func (e Event) Leader() (Leader, bool)         { return payloadAs[Leader](e) }
func (e Event) GC() (GC, bool)                 { return payloadAs[GC](e) }
func (e Event) Drift() (Drift, bool)           { return payloadAs[Drift](e) }
func (e Event) Ownership() (Ownership, bool)   { return payloadAs[Ownership](e) }
func (e Event) FinalizerChange() (FinalizerChange, bool) {
	return payloadAs[FinalizerChange](e)
}
func (e Event) Deleting() (Deleting, bool)       { return payloadAs[Deleting](e) }
func (e Event) Deleted() (Deleted, bool)         { return payloadAs[Deleted](e) }
func (e Event) Convergence() (Convergence, bool) { return payloadAs[Convergence](e) }
func (e Event) Process() (Process, bool)         { return payloadAs[Process](e) }
func (e Event) Limits() (Limits, bool)           { return payloadAs[Limits](e) }
func (e Event) BadLine() (BadLine, bool)         { return payloadAs[BadLine](e) }
func (e Event) Loss() (Loss, bool)               { return payloadAs[Loss](e) }
func (e Event) Message() (Message, bool)         { return payloadAs[Message](e) }
func (e Event) Action() (Action, bool)           { return payloadAs[Action](e) }
func (e Event) FaultSwitch() (FaultSwitch, bool) { return payloadAs[FaultSwitch](e) }
func (e Event) Injection() (Injection, bool)     { return payloadAs[Injection](e) }
func (e Event) Startup() (Startup, bool)         { return payloadAs[Startup](e) }

// ExitCode is c as Process.Code takes it.
func ExitCode(c int) *int { return &c }

// As is e's payload as a P, the zero P if e's kind carries another: for a
// reader that already picked events of one kind and wants one field.
func As[P Payload](e Event) P {
	p, _ := payloadAs[P](e)
	return p
}
