// Package stats folds the trace into what the panes show: per operator style,
// the pipeline stage of the latest event, the queue, the reconciles and their
// causes, API requests, the leader, drift and garbage collection. Apply is
// called for every event, so it only does map lookups and arithmetic; all
// formatting happens when a pane is drawn.
package stats

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/world"
)

// Go pipeline stage indexes, into a Go style's Traits().Stages.
const (
	stWatch = iota
	stInformer
	stQueue
	stReconcile
	stAPI
)

// Shell pipeline stage indexes, into the shell loop's Traits().Stages.
const (
	stPoll = iota
	stGet
	stApply
	stPatch
)

// SparkLen is how many one-second buckets the depth sparkline keeps.
const SparkLen = 24

// Reconcile is one finished (or running) call of reconcile.
type Reconcile struct {
	Object            string
	Start, End        time.Time
	DurationMS        float64
	Result, Changed   string
	Status, Error     string
	Cause, CauseEvent string
	Causes            int
}

// Replica is what the trace says about one replica process.
type Replica struct {
	Name     string // "a"
	PID      int
	Running  bool
	Paused   bool // frozen (SIGSTOP): alive, never runs
	Restarts int
	Signal   string // of the last exit, if killed
	ExitAt   time.Time
}

// Collected is an object garbage-collected recently.
type Collected struct {
	Object, Owner string
	At            time.Time
}

// Drift is the last drift of a style's Deployment.
type Drift struct {
	Object, What string
	Detected     time.Time
	Repaired     time.Time // zero while not repaired
	LatencyMS    float64
}

// Handover is the last time a Deployment's field changed owners (field
// managers), and how often fields of the style's Deployments have.
type Handover struct {
	Object, Path, From, To string
	At                     time.Time
	Count                  int
}

// Convergence is what the world observer reported of one Echo: how long
// it took from its creation until its Deployment and status caught up, and
// the same for its last edit.
type Convergence struct {
	CreatedMS float64
	CreatedAt time.Time // zero until the creation converged
	EditMS    float64
	EditAt    time.Time // zero until an edit converged
}

// ClientLimit is the client-side rate limit a replica's library set.
type ClientLimit struct {
	QPS   float64 // < 0: none, left to the apiserver's priority and fairness
	Burst int
}

// None says there is no client-side limit.
func (l ClientLimit) None() bool { return l.QPS < 0 }

// WatchEvents are the events watches delivered to a style's replicas
// (api.watch_event), by resource, and the last one.
type WatchEvents struct {
	N          int
	ByResource map[string]int // "deployments" → count
	Last       WatchEvent
}

// WatchEvent is one event a watch delivered.
type WatchEvent struct {
	Type     string // "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"; "" if unreadable
	Resource string // "deployments"
	Object   string // "Deployment/echo-hello", "" if not known
	At       time.Time
}

// Denied counts the requests the apiserver refused with 403 Forbidden:
// what the Role does not allow.
type Denied struct {
	N    int
	Last VerbKey // the last one refused
	At   time.Time
}

// VerbKey is one line of the by-verb count: "get deployments".
type VerbKey struct{ Verb, Resource string }

// Operator is everything the trace says of one operator style.
type Operator struct {
	Name style.Style

	Stage   int // index into Name.Traits().Stages, -1 before any event
	StageAt time.Time

	// The shell loop's poll: the last tick, its interval, and the time of the
	// last event of that poll (the sleep starts after it).
	PollAt, PollLast time.Time
	PollInterval     time.Duration

	Depth, MaxDepth int
	Adds, Retries   int
	spark           [SparkLen]sparkBucket

	Reconciles, Errors int
	Running            *Reconcile // started, not ended
	Last               *Reconcile
	// inFlight are the reconciles started and not ended, by replica then
	// id: workers run several at once, and a dead replica ends none.
	inFlight map[string]map[float64]struct{}

	APITotal int             // api.request events, and the requests a proxy dropped from the trace
	Verbs    map[VerbKey]int // of the api.request events
	// Limit is the client-side rate limit the replicas reported
	// (client.limits), nil before any did; the replicas of a style run the
	// same code, so the last report stands for all.
	Limit  *ClientLimit
	apiSec [60]secBucket

	// Faults are the faults on at each replica's proxy (fault.set), by
	// replica then in the order they were turned on; Injected counts what
	// they touched (fault.injected).
	Faults   map[string][]string
	Injected int

	// What the proxies saw beyond counting: the watch events they
	// delivered and the requests the apiserver denied. A student's
	// operator traces nothing of its own, so its pane is made of these.
	Watch  WatchEvents
	Denied Denied

	Leader      string // replica holding the Lease ("a"), from the operators' own events
	LeaderAt    time.Time
	Acquired    int // leader.acquired events: how often someone won
	LeaderEvent string

	Replicas map[string]*Replica

	Drift    *Drift
	Handover *Handover // nil until a field changed owners
	// Converged is, by Echo name, what the world reported of its
	// convergence; forgotten when the Echo is deleted.
	Converged map[string]*Convergence
	createdN  int // of Converged, those whose creation converged
	// Batch is the last batch of Echoes created together, and how long
	// they took to converge; nil before any new Echo converged. An Echo
	// seen created more than world.BatchGap after the batch's last
	// convergence begins a new one.
	Batch         *world.Batch
	CollectedRecv []Collected // newest last, at most maxCollected

	Events int
}

type sparkBucket struct {
	sec       int64
	max, last int
	valid     bool
}

type secBucket struct {
	sec int64
	n   int
}

const maxCollected = 8

// Stats is the fold of the whole trace.
type Stats struct {
	Styles  map[style.Style]*Operator
	Events  int
	Dropped int
	Last    time.Time // time of the newest event
	Startup Startup
}

// Startup is how the sandbox's start-up goes on behind the screen
// (rlab.startup). A trace without those events (recorded before they
// existed) leaves it zero: nothing is said to be starting.
type Startup struct {
	Next  string // what is still starting; "" before the first word and once all has
	Error string // why the start-up failed
}

// Starting says whether the start-up is still under way.
func (s Startup) Starting() bool { return s.Next != "" && s.Error == "" }

// New returns empty stats for the given styles.
func New(styles []style.Style) *Stats {
	s := &Stats{Styles: map[style.Style]*Operator{}}
	for _, st := range styles {
		s.Styles[st] = newOperator(st)
	}
	return s
}

func newOperator(name style.Style) *Operator {
	return &Operator{Name: name, Stage: -1, Verbs: map[VerbKey]int{}, Replicas: map[string]*Replica{},
		Watch:    WatchEvents{ByResource: map[string]int{}},
		inFlight: map[string]map[float64]struct{}{}, Converged: map[string]*Convergence{}, Faults: map[string][]string{}}
}

// StyleOf is the operator style an event is about: its source's style, or
// that of its namespace, or of a supervisor event's replica ("clientgo/a").
func StyleOf(e trace.Event) style.Style {
	if e.Source == trace.SourceYou {
		return "" // the student's request, in whatever namespace: no operator's cost
	}
	if s := e.Style(); s != "" {
		return s
	}
	if s := style.FromNamespace(e.Namespace); s != "" {
		return s
	}
	if e.Source == trace.SourceSupervisor {
		return style.FromSource(e.Object)
	}
	return ""
}

// replicaOf is "a" for sources "clientgo/a" and "proxy/clientgo/a".
func replicaOf(source string) string {
	if i := strings.LastIndexByte(source, '/'); i >= 0 {
		return source[i+1:]
	}
	return ""
}

// ReplicaOfIdentity is "a" for a Lease holder "clientgo-a-4121", or the
// identity itself if it is not one a replica makes.
func ReplicaOfIdentity(id string) string {
	if _, replica, _, ok := style.ParseIdentity(id); ok {
		return replica
	}
	return id
}

// CreatedConverged is how many of the style's Echoes converged after their
// creation (and were not deleted since).
func (st *Operator) CreatedConverged() int { return st.createdN }

// InFlight is how many reconciles are under way now.
func (st *Operator) InFlight() int {
	n := 0
	for _, calls := range st.inFlight {
		n += len(calls)
	}
	return n
}

func (st *Operator) depth(e trace.Event) {
	q, ok := e.Queue()
	if !ok {
		return
	}
	st.Depth = q.Depth
	st.MaxDepth = max(st.MaxDepth, st.Depth)
	sec := e.Time.Unix()
	b := &st.spark[sec%SparkLen]
	if !b.valid || b.sec != sec {
		*b = sparkBucket{sec: sec, valid: true}
	}
	b.max = max(b.max, st.Depth)
	b.last = st.Depth
}

// Spark is the queue depth over the last SparkLen seconds up to now: the
// highest depth seen in each second; a second with no queue event keeps the
// depth the queue was left at.
func (st *Operator) Spark(now time.Time) []int {
	out := make([]int, SparkLen)
	end := now.Unix()
	window := func(i int) (sparkBucket, bool) {
		sec := end - int64(SparkLen-1-i)
		b := st.spark[((sec%SparkLen)+SparkLen)%SparkLen]
		return b, b.valid && b.sec == sec
	}
	// Before the window's first event the depth is not known: 0 if the
	// window has events, else the depth the queue was left at.
	carry := st.Depth
	for i := range SparkLen {
		if _, ok := window(i); ok {
			carry = 0
			break
		}
	}
	for i := range SparkLen {
		if b, ok := window(i); ok {
			out[i], carry = b.max, b.last
			continue
		}
		out[i] = carry
	}
	return out
}

// PerMinute is how many API requests were made in the minute up to now.
func (st *Operator) PerMinute(now time.Time) int {
	end := now.Unix()
	n := 0
	for _, b := range st.apiSec {
		if b.sec > end-60 && b.sec <= end {
			n += b.n
		}
	}
	return n
}

// NextPoll is when the shell loop polls next, and whether that is known.
func (st *Operator) NextPoll() (time.Time, bool) {
	if st.PollAt.IsZero() || st.PollInterval == 0 {
		return time.Time{}, false
	}
	return st.PollLast.Add(st.PollInterval), true
}

// Collected lists the objects collected within d before now, oldest first.
func (st *Operator) Collected(now time.Time, d time.Duration) []Collected {
	var out []Collected
	for _, c := range st.CollectedRecv {
		if age := now.Sub(c.At); age >= 0 && age < d {
			out = append(out, c)
		}
	}
	return out
}

// Verb is one line of the by-verb breakdown.
type Verb struct {
	Key   string // "get deployments"
	Count int
}

// TopVerbs sorts counts by count, then name.
func TopVerbs(counts map[VerbKey]int) []Verb {
	out := make([]Verb, 0, len(counts))
	for k, v := range counts {
		out = append(out, Verb{k.Verb + " " + k.Resource, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// ReplicaNames are the replicas seen for a style, sorted.
func (st *Operator) ReplicaNames() []string {
	out := make([]string, 0, len(st.Replicas))
	for n := range st.Replicas {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// VerbOrder is how a pane lists verbs: reads, then watches, then writes;
// a verb not listed here follows, by name.
var VerbOrder = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// IsWrite says whether a request with this verb changes the cluster.
func IsWrite(verb string) bool { return trace.IsWriteVerb(verb) }

// Count is one name and how many.
type Count struct {
	Name string
	N    int
}

// Resource is one resource's requests, by verb in VerbOrder.
type Resource struct {
	Name  string
	Total int
	Verbs []Count
}

// ByVerb sums the requests by verb over every resource, in VerbOrder.
func ByVerb(counts map[VerbKey]int) []Count {
	by := map[string]int{}
	for k, n := range counts {
		by[k.Verb] += n
	}
	return ordered(by)
}

// ByResource groups the requests by resource, busiest first (then by
// name), each by verb in VerbOrder.
func ByResource(counts map[VerbKey]int) []Resource {
	by := map[string]map[string]int{}
	for k, n := range counts {
		if by[k.Resource] == nil {
			by[k.Resource] = map[string]int{}
		}
		by[k.Resource][k.Verb] += n
	}
	out := make([]Resource, 0, len(by))
	for r, verbs := range by {
		res := Resource{Name: r, Verbs: ordered(verbs)}
		for _, v := range res.Verbs {
			res.Total += v.N
		}
		out = append(out, res)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// ordered lists counts in VerbOrder, then the other verbs by name.
func ordered(by map[string]int) []Count {
	out := make([]Count, 0, len(by))
	for _, v := range VerbOrder {
		if n := by[v]; n > 0 {
			out = append(out, Count{v, n})
		}
	}
	var rest []Count
	for v, n := range by {
		if n > 0 && !slices.Contains(VerbOrder, v) {
			rest = append(rest, Count{v, n})
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].Name < rest[j].Name })
	return append(out, rest...)
}

// Resources lists the watch events by resource, most first (then by name).
func (w *WatchEvents) Resources() []Count {
	out := make([]Count, 0, len(w.ByResource))
	for r, n := range w.ByResource {
		out = append(out, Count{r, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Name < out[j].Name
	})
	return out
}
