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

	Drift *Drift
	// Converged is, by Echo name, what the world reported of its
	// convergence; forgotten when the Echo is deleted.
	Converged     map[string]*Convergence
	createdN      int         // of Converged, those whose creation converged
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
}

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
		inFlight: map[string]map[float64]struct{}{}, Converged: map[string]*Convergence{}}
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

// Apply folds one event in.
func (s *Stats) Apply(e trace.Event) {
	s.Events++
	if e.Time.After(s.Last) {
		s.Last = e.Time
	}
	if e.Kind == trace.Dropped {
		s.Dropped += num(e, trace.FieldCount)
	}
	name := StyleOf(e)
	st := s.Styles[name]
	if st == nil {
		return
	}
	st.apply(e)
}

func (st *Operator) stage(i int, at time.Time) {
	if at.Before(st.StageAt) {
		return // out of order across sources: keep the newest
	}
	st.Stage, st.StageAt = i, at
}

func num(e trace.Event, k string) int {
	v, _ := e.Num(k)
	return int(v)
}

func (st *Operator) apply(e trace.Event) {
	st.Events++
	switch e.Kind {
	case trace.PollTick, trace.Kubectl:
		st.shellLoop(e)
	case trace.InformerAdd, trace.InformerUpdate, trace.InformerDelete,
		trace.QueueAdd, trace.QueueRequeue, trace.QueueGet, trace.QueueDone:
		st.queue(e)
	case trace.ReconcileStart, trace.ReconcileEnd:
		st.reconcile(e)
	case trace.APIRequest, trace.Dropped:
		st.api(e)
	case trace.APIWatchEvent:
		st.watchEvent(e)
	case trace.LeaderAcquired, trace.LeaderLost, trace.LeaderObserved:
		st.leader(e)
	case trace.ProcessStart, trace.ProcessExit, trace.ProcessPause, trace.ProcessResume:
		st.process(e)
	case trace.GCCollected, trace.DriftDetected, trace.DriftRepaired, trace.Converged, trace.EchoDeleted:
		st.observed(e)
	case trace.ClientLimits:
		qps, _ := e.Num(trace.FieldQPS)
		st.Limit = &ClientLimit{QPS: qps, Burst: num(e, trace.FieldBurst)}
	}
}

// shellLoop folds the shell loop's own events: its poll and its kubectl.
func (st *Operator) shellLoop(e trace.Event) {
	if e.Kind == trace.PollTick {
		st.PollAt, st.PollLast = e.Time, e.Time
		if v, ok := e.Num(trace.FieldIntervalS); ok {
			st.PollInterval = time.Duration(v * float64(time.Second))
		}
		st.stage(stPoll, e.Time)
		return
	}
	if e.Time.After(st.PollLast) {
		st.PollLast = e.Time
	}
	switch verb := e.Str(trace.FieldVerb); {
	case strings.HasPrefix(verb, "get"):
		st.stage(stGet, e.Time)
	case strings.HasPrefix(verb, "apply"):
		st.stage(stApply, e.Time)
	case strings.HasPrefix(verb, "patch"):
		st.stage(stPatch, e.Time)
	}
}

// queue folds the informers' deliveries and the workqueue.
func (st *Operator) queue(e trace.Event) {
	switch e.Kind {
	case trace.InformerAdd, trace.InformerUpdate, trace.InformerDelete:
		st.stage(stInformer, e.Time)
	case trace.QueueAdd, trace.QueueRequeue:
		st.Adds++
		if e.Kind == trace.QueueRequeue {
			st.Retries++
		}
		st.depth(e)
		st.stage(stQueue, e.Time)
	case trace.QueueGet:
		st.depth(e)
		st.stage(stReconcile, e.Time)
	case trace.QueueDone:
		// Done follows the requeue of a failed reconcile (both Go styles):
		// the key waits in the queue, where the requeue put the marker.
		st.depth(e)
	}
}

// reconcile folds the start and the end of a call of reconcile. The shell
// loop reconciles within its poll: the poll lasts until it ends.
func (st *Operator) reconcile(e trace.Event) {
	st.track(e)
	if e.Kind == trace.ReconcileStart {
		st.Running = &Reconcile{Object: e.Object, Start: e.Time, Cause: e.Str(trace.FieldCause),
			CauseEvent: e.Str(trace.FieldCauseEvent), Causes: num(e, trace.FieldCauses)}
	} else {
		r := st.Running
		if r == nil || r.Object != e.Object {
			r = &Reconcile{Object: e.Object}
		}
		st.Running = nil
		r.End = e.Time
		r.DurationMS, _ = e.Num(trace.FieldDurationMS)
		r.Result, r.Changed = e.Str(trace.FieldResult), e.Str(trace.FieldChanged)
		r.Status, r.Error = e.Str(trace.FieldStatus), e.Str(trace.FieldError)
		st.Last = r
		st.Reconciles++
		if r.Result == trace.ResultError {
			st.Errors++
		}
	}
	switch {
	case !st.Name.Traits().Polls:
		st.stage(stReconcile, e.Time)
	case e.Time.After(st.PollLast):
		st.PollLast = e.Time
	}
}

// api folds a request through a replica's proxy, or the requests it could
// not report.
func (st *Operator) api(e trace.Event) {
	fromProxy := strings.HasPrefix(e.Source, "proxy/")
	if e.Kind == trace.Dropped {
		if fromProxy {
			// A proxy drops only its own api.request events: the requests
			// were made, and count.
			st.APITotal += num(e, trace.FieldCount)
		}
		return
	}
	st.APITotal++
	k := VerbKey{e.Str(trace.FieldVerb), e.Str(trace.FieldResource)}
	st.Verbs[k]++ // no string built per event
	if num(e, trace.FieldCode) == 403 {
		st.Denied.N++
		st.Denied.Last, st.Denied.At = k, e.Time
	}
	sec := e.Time.Unix()
	b := &st.apiSec[sec%int64(len(st.apiSec))]
	if b.sec != sec {
		b.sec, b.n = sec, 0
	}
	b.n++
	// Lease renewals and watches are background traffic: the marker
	// follows the requests reconcile makes. A polling style's stages are
	// its own kubectl calls, and one with no trace of its own has no
	// pipeline to mark.
	if t := st.Name.Traits(); !fromProxy || t.Polls || !t.Traces {
		return
	}
	switch {
	case e.Verb() == trace.VerbWatch:
		st.stage(stWatch, e.Time)
	case !e.IsHousekeeping():
		st.stage(stAPI, e.Time)
	}
}

// watchEvent folds one event a watch delivered through a replica's proxy.
func (st *Operator) watchEvent(e trace.Event) {
	w := &st.Watch
	w.N++
	r := e.Str(trace.FieldResource)
	w.ByResource[r]++
	if !e.Time.Before(w.Last.At) {
		w.Last = WatchEvent{Type: e.Str(trace.FieldType), Resource: r, Object: e.Object, At: e.Time}
	}
}

// leader folds what the replicas say of their Lease, and what the world
// observer sees of it.
func (st *Operator) leader(e trace.Event) {
	switch e.Kind {
	case trace.LeaderAcquired:
		st.Leader, st.LeaderAt = replicaOf(e.Source), e.Time
		st.Acquired++
		st.LeaderEvent = "acquired by " + st.Leader
	case trace.LeaderLost:
		if r := replicaOf(e.Source); r == st.Leader {
			st.Leader = ""
		}
		st.LeaderAt = e.Time
		st.LeaderEvent = "lost by " + replicaOf(e.Source)
		if why := e.Str(trace.FieldReason); why != "" {
			st.LeaderEvent += " (" + why + ")"
		}
	case trace.LeaderObserved:
		if e.Source == trace.SourceWorld {
			if id := e.Str(trace.FieldIdentity); id != "" {
				st.Leader = ReplicaOfIdentity(id)
			} else {
				st.Leader = ""
			}
			st.LeaderAt = e.Time
		}
	}
}

// observed folds what the world observer saw of the style's objects: garbage
// collection, drift and its repair, convergence after an edit.
func (st *Operator) observed(e trace.Event) {
	switch e.Kind {
	case trace.GCCollected:
		st.CollectedRecv = append(st.CollectedRecv, Collected{Object: e.Object, Owner: e.Str(trace.FieldOwner), At: e.Time})
		if n := len(st.CollectedRecv); n > maxCollected {
			st.CollectedRecv = append(st.CollectedRecv[:0], st.CollectedRecv[n-maxCollected:]...)
		}
	case trace.DriftDetected:
		st.Drift = &Drift{Object: e.Object, What: e.Str(trace.FieldWhat), Detected: e.Time}
	case trace.DriftRepaired:
		d := st.Drift
		if d == nil || d.Object != e.Object {
			d = &Drift{Object: e.Object, What: e.Str(trace.FieldWhat)}
		}
		d.Repaired = e.Time
		d.LatencyMS, _ = e.Num(trace.FieldLatencyMS)
		if d.Detected.IsZero() {
			d.Detected = e.Time.Add(-time.Duration(d.LatencyMS * float64(time.Millisecond)))
		}
		st.Drift = d
	case trace.Converged:
		name := e.Str(trace.FieldEcho)
		if name == "" {
			name = strings.TrimPrefix(e.Object, "Echo/")
		}
		c := st.Converged[name]
		if c == nil {
			c = &Convergence{}
			st.Converged[name] = c
		}
		ms, _ := e.Num(trace.FieldLatencyMS)
		if e.Bool(trace.FieldCreated) {
			if c.CreatedAt.IsZero() {
				st.createdN++
			}
			c.CreatedMS, c.CreatedAt = ms, e.Time
		} else {
			c.EditMS, c.EditAt = ms, e.Time
		}
	case trace.EchoDeleted:
		// A new Echo of the same name converges anew.
		name := strings.TrimPrefix(e.Object, "Echo/")
		if c := st.Converged[name]; c != nil && !c.CreatedAt.IsZero() {
			st.createdN--
		}
		delete(st.Converged, name)
	}
}

// process folds the supervisor's events about one replica process.
func (st *Operator) process(e trace.Event) {
	name := replicaOf(e.Object)
	if e.Kind == trace.ProcessExit && e.Bool(trace.FieldRemoved) {
		delete(st.Replicas, name) // removed for good (the second shell loop): it leaves the pane
		if st.Leader == name {
			st.Leader = ""
		}
		return
	}
	delete(st.inFlight, name) // a replica that starts or exits has no call under way
	r := st.Replicas[name]
	if r == nil {
		r = &Replica{Name: name}
		st.Replicas[name] = r
	}
	r.PID = num(e, trace.FieldPID)
	switch e.Kind {
	case trace.ProcessStart:
		r.Running, r.Paused, r.Signal = true, false, ""
		r.Restarts = num(e, trace.FieldRestarts)
	case trace.ProcessExit:
		r.Running, r.Paused, r.Signal, r.ExitAt = false, false, e.Str(trace.FieldSignal), e.Time
		r.Restarts = num(e, trace.FieldRestarts)
		if st.Leader == name {
			st.Leader = "" // a dead replica leads no more, whatever the Lease says
		}
	case trace.ProcessPause:
		r.Running, r.Paused = true, true
	case trace.ProcessResume:
		r.Paused = false
	}
}

// track counts the calls under way, by replica and id.
func (st *Operator) track(e trace.Event) {
	id, ok := e.Num(trace.FieldID) // a call number within the replica
	if !ok {
		return
	}
	r := replicaOf(e.Source)
	calls := st.inFlight[r]
	if e.Kind == trace.ReconcileEnd {
		delete(calls, id)
		return
	}
	if calls == nil {
		calls = map[float64]struct{}{}
		st.inFlight[r] = calls
	}
	calls[id] = struct{}{}
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
	v, ok := e.Num(trace.FieldDepth)
	if !ok {
		return
	}
	st.Depth = int(v)
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
