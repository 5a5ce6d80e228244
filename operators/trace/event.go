// Package trace is the one event schema of rlab: operators, proxies, the world
// observer and the supervisor all describe what happened as Events. Operators
// write them as JSON lines on stdout; rlab reads those lines and publishes
// them on its bus (sim/bus), to which the screen, the timeline and the
// lessons subscribe. It lives beside the operators because they import it,
// wherever they run.
package trace

import (
	"time"

	"github.com/kkloud/rlab/operators/style"
)

// Kind names what happened. The prefix before the dot is the family.
type Kind string

// The kinds every source uses. Each carries one payload (payload.go), whose
// tags name the keys it is written with; Schema lists them per kind.
const (
	// InformerAdd/Update/Delete: an informer delivered an event to an
	// operator (mapped to the Echo that controls the object, if any).
	InformerAdd    Kind = "informer.add"
	InformerUpdate Kind = "informer.update"
	InformerDelete Kind = "informer.delete"

	// QueueAdd/Get/Done/Requeue: the workqueue. A failed reconcile's key is
	// requeued before it is done.
	QueueAdd     Kind = "queue.add"
	QueueGet     Kind = "queue.get"
	QueueDone    Kind = "queue.done"
	QueueRequeue Kind = "queue.requeue"

	// ReconcileStart/End: one call of reconcile, with the causes that
	// queued it, and how it ended: what it changed and the status it wrote.
	ReconcileStart Kind = "reconcile.start"
	ReconcileEnd   Kind = "reconcile.end"

	// APIRequest: one request through a replica's proxy.
	APIRequest Kind = "api.request"
	// APIWatchEvent: one event a watch delivered to a replica, through its
	// proxy, so operators that trace nothing of their own still show what
	// they were told.
	APIWatchEvent Kind = "api.watch_event"

	// PollTick: the shell loop woke up.
	PollTick Kind = "poll.tick"
	// Kubectl: the shell loop ran kubectl.
	Kubectl Kind = "kubectl"

	// LeaderAcquired/Lost: this replica won or lost the Lease.
	// LeaderObserved: someone holds the Lease (rlab's own observer).
	LeaderAcquired Kind = "leader.acquired"
	LeaderLost     Kind = "leader.lost"
	LeaderObserved Kind = "leader.observed"

	// GCCollected: a child vanished after its owner.
	GCCollected Kind = "gc.collected"
	// DriftDetected/Repaired: a child stopped matching its Echo, and
	// matched again.
	DriftDetected Kind = "drift.detected"
	DriftRepaired Kind = "drift.repaired"
	// Handover: a field of a Deployment changed owners: in its
	// managedFields, another field manager now owns it (an Update takes it,
	// a forced apply takes it, a conflicting apply is refused instead).
	Handover Kind = "field.handover"
	// Finalizer: an operator added its finalizer to an Echo, or cleaned up
	// after a deleted one and removed it.
	Finalizer Kind = "finalizer"
	// EchoDeleting: an Echo was asked to go but finalizers hold it.
	// EchoDeleted: it went.
	EchoDeleting Kind = "echo.deleting"
	EchoDeleted  Kind = "echo.deleted"

	// Converged: after an Echo edit, its Deployment and status caught up.
	Converged Kind = "echo.converged"

	// ProcessStart/Exit: a replica process started, or exited (and whether
	// it will be restarted). ProcessPause/Resume: it was frozen (SIGSTOP)
	// and let go on (SIGCONT).
	ProcessStart  Kind = "process.start"
	ProcessExit   Kind = "process.exit"
	ProcessPause  Kind = "process.pause"
	ProcessResume Kind = "process.resume"

	// ClientLimits: a replica's client-side rate limit, as its library set
	// it (fields qps, burst; qps < 0: none, the library leaves it to the
	// apiserver's priority and fairness).
	ClientLimits Kind = "client.limits"

	// Malformed: a line from a child that is not an event.
	Malformed Kind = "trace.malformed"
	// Dropped: events lost to a full buffer.
	Dropped Kind = "trace.dropped"
	// Log: a human message worth a timeline line.
	Log Kind = "log"

	// FaultSet: a fault was turned on or off for a replica, at its proxy
	// (FaultSwitch).
	// FaultInjected: the fault touched one request or one watch event of
	// that replica: which, and how (Injection: the fault, and the fields of what it
	// touched).
	FaultSet      Kind = "fault.set"
	FaultInjected Kind = "fault.injected"

	// Act: rlab performed a lesson action (Action.Action) on the sandbox,
	// for autoplay or for `rlab do` (Action.Via), at the time it began: what
	// only rlab can do (partition, pause, slow down …) made visible.
	Act Kind = "rlab.act"

	// StartupStep: a step of the sandbox's start-up that goes on behind
	// the screen ended (Startup: what is done, what is next), or it failed.
	StartupStep Kind = "rlab.startup"
)

// Object is how an event names what it is about: "Echo/hello",
// "Deployment/echo-hello".
func Object(kind, name string) string { return kind + "/" + name }

// Sources that are not an operator replica ("clientgo/a") or its proxy
// ("proxy/clientgo/a").
const (
	SourceWorld      = "world"      // rlab's own observer of the cluster (sim/world)
	SourceSupervisor = "supervisor" // what runs the replicas (sim/supervisor)
	SourceRlab       = "rlab"       // rlab itself: what its screen or recorder lost
	// SourceYou is the proxy in front of the student's own requests: the
	// kubeconfig `rlab env` hands out, and what keys, autoplay and `rlab
	// do` change on the student's behalf. Its requests are no operator's.
	SourceYou = "proxy/" + YouProxy
)

// YouProxy is the name of the student's proxy.
const YouProxy = "you"

// Reconcile causes, the value of the "cause" field.
const (
	CauseEvent   = "event"   // an informer event (cause_event says which)
	CauseRequeue = "requeue" // the last reconcile failed; rate-limited retry
	CauseAfter   = "requeue-after"
	CauseResync  = "resync"       // periodic resync of the informer
	CausePoll    = "poll"         // the shell loop's timer
	CauseInitial = "initial-list" // an object present when the informer started
)

// Event is one thing that happened, from one source. It travels as JSON
// (wire.go): the payload under "fields", by the keys of its json tags.
type Event struct {
	Time time.Time
	// Source is who saw it: "clientgo/a", "proxy/runtime/b", "world", "supervisor".
	Source string
	Kind   Kind
	// Namespace and Object ("Echo/hello") name what it is about, if anything.
	Namespace string
	Object    string
	// Payload is what the kind carries (payloadOf): a Queue for queue.add.
	// Read it with the typed views, e.Queue().
	Payload Payload
	// offSchema are the keys a decoded line carried that its kind does
	// not, or whose values did not fit: CheckSchema reports them.
	offSchema []string
}

// Style is the operator style of the source ("clientgo" for "clientgo/a" and
// "proxy/clientgo/a"), or "".
func (e Event) Style() style.Style { return style.FromSource(e.Source) }
