package stats

// The fold: Apply takes one event to the Operator it is about, and each
// handler updates that operator's counters. Only map lookups and arithmetic
// here; drawing formats.

import (
	"slices"
	"strings"
	"time"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/world"
)

// Apply folds one event in.
func (s *Stats) Apply(e trace.Event) {
	s.Events++
	if e.Time.After(s.Last) {
		s.Last = e.Time
	}
	switch e.Kind {
	case trace.Dropped:
		l, _ := e.Loss()
		s.Dropped += l.Count
	case trace.StartupStep:
		p, _ := e.Startup()
		s.Startup = Startup{Next: p.Next, Error: p.Error}
		return
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
	case trace.GCCollected, trace.DriftDetected, trace.DriftRepaired, trace.Converged, trace.EchoDeleted, trace.Handover:
		st.observed(e)
	case trace.FaultSet:
		f, _ := e.FaultSwitch()
		r, kind := replicaOf(e.Source), f.Fault
		on := slices.DeleteFunc(st.Faults[r], func(k string) bool { return k == kind })
		if f.On {
			on = append(on, kind)
		}
		st.Faults[r] = on
	case trace.FaultInjected:
		st.Injected++
	case trace.ClientLimits:
		l, _ := e.Limits()
		st.Limit = &ClientLimit{QPS: l.QPS, Burst: l.Burst}
	}
}

// shellLoop folds the shell loop's own events: its poll and its kubectl.
func (st *Operator) shellLoop(e trace.Event) {
	if e.Kind == trace.PollTick {
		st.PollAt, st.PollLast = e.Time, e.Time
		if p, _ := e.Poll(); p.IntervalS > 0 {
			st.PollInterval = time.Duration(p.IntervalS * float64(time.Second))
		}
		st.stage(stPoll, e.Time)
		return
	}
	if e.Time.After(st.PollLast) {
		st.PollLast = e.Time
	}
	switch verb := e.Verb(); {
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
		p, _ := e.Reconcile()
		st.Running = &Reconcile{Object: e.Object, Start: e.Time, Cause: p.Cause,
			CauseEvent: p.CauseEvent, Causes: p.Causes}
	} else {
		r := st.Running
		if r == nil || r.Object != e.Object {
			r = &Reconcile{Object: e.Object}
		}
		st.Running = nil
		r.End = e.Time
		p, _ := e.Reconcile()
		r.DurationMS = p.DurationMS
		r.Result, r.Changed = p.Result, p.Changed
		r.Status, r.Error = p.Status, p.Error
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
			l, _ := e.Loss()
			st.APITotal += l.Count
		}
		return
	}
	st.APITotal++
	q, _ := e.Request()
	k := VerbKey{q.Verb, q.Resource}
	st.Verbs[k]++ // no string built per event
	if q.Code == 403 {
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
	case q.Verb == trace.VerbWatch:
		st.stage(stWatch, e.Time)
	case !trace.IsHousekeepingResource(q.Resource):
		st.stage(stAPI, e.Time)
	}
}

// watchEvent folds one event a watch delivered through a replica's proxy.
func (st *Operator) watchEvent(e trace.Event) {
	w := &st.Watch
	w.N++
	p, _ := e.WatchEvent()
	r := p.Resource
	w.ByResource[r]++
	if !e.Time.Before(w.Last.At) {
		w.Last = WatchEvent{Type: p.Type, Resource: r, Object: e.Object, At: e.Time}
	}
}

// leader folds what the replicas say of their Lease, and what the world
// observer sees of it.
func (st *Operator) leader(e trace.Event) {
	l, _ := e.Leader()
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
		if why := l.Reason; why != "" {
			st.LeaderEvent += " (" + why + ")"
		}
	case trace.LeaderObserved:
		if e.Source == trace.SourceWorld {
			if id := l.Identity; id != "" {
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
		g, _ := e.GC()
		st.CollectedRecv = append(st.CollectedRecv, Collected{Object: e.Object, Owner: g.Owner, At: e.Time})
		if n := len(st.CollectedRecv); n > maxCollected {
			st.CollectedRecv = append(st.CollectedRecv[:0], st.CollectedRecv[n-maxCollected:]...)
		}
	case trace.DriftDetected:
		p, _ := e.Drift()
		st.Drift = &Drift{Object: e.Object, What: p.What, Detected: e.Time}
	case trace.Handover:
		n := 1
		if st.Handover != nil {
			n = st.Handover.Count + 1
		}
		o, _ := e.Ownership()
		st.Handover = &Handover{Object: e.Object, Path: o.Path, From: o.From,
			To: o.To, At: e.Time, Count: n}
	case trace.DriftRepaired:
		p, _ := e.Drift()
		d := st.Drift
		if d == nil || d.Object != e.Object {
			d = &Drift{Object: e.Object, What: p.What}
		}
		d.Repaired = e.Time
		d.LatencyMS = p.LatencyMS
		if d.Detected.IsZero() {
			d.Detected = e.Time.Add(-time.Duration(d.LatencyMS * float64(time.Millisecond)))
		}
		st.Drift = d
	case trace.Converged:
		p, _ := e.Convergence()
		name := p.Echo
		if name == "" {
			name = strings.TrimPrefix(e.Object, "Echo/")
		}
		c := st.Converged[name]
		if c == nil {
			c = &Convergence{}
			st.Converged[name] = c
		}
		ms := p.LatencyMS
		if created, ok := world.CreationConverged(e); ok {
			if c.CreatedAt.IsZero() {
				st.createdN++
			}
			c.CreatedMS, c.CreatedAt = ms, e.Time
			if st.Batch == nil || !st.Batch.Takes(created) {
				st.Batch = &world.Batch{}
			}
			st.Batch.Add(created, e.Time)
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
	p, _ := e.Process()
	if e.Kind == trace.ProcessExit && p.Removed {
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
	r.PID = p.PID
	switch e.Kind {
	case trace.ProcessStart:
		r.Running, r.Paused, r.Signal = true, false, ""
		r.Restarts = p.Restarts
	case trace.ProcessExit:
		r.Running, r.Paused, r.Signal, r.ExitAt = false, false, p.Signal, e.Time
		r.Restarts = p.Restarts
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
	p, _ := e.Reconcile()
	id := float64(p.ID) // a call number within the replica, from 1
	if p.ID == 0 {
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
