package check

// Retried or dropped: what the requests at an operator's proxies show about
// the writes a fault refused. A refused write followed by another attempt
// at the same object, with no watch event reaching the replica in between,
// is a retry: nothing but the operator's own queue brought it back. A
// refused write with no attempt after it is dropped, unless the retries
// before it were backing off (each wait longer than the last) and the next
// one, at that pace, falls after the judging window: then the operator is
// retrying, only slowly, and the verdict says so instead of "dropped".

import (
	"fmt"
	"strings"
	"time"
)

// try is one attempt at a write.
type try struct {
	at    time.Time
	verb  string
	code  int  // 0: the client left before an answer
	woken bool // a watch event reached the replica since the attempt before
}

func (t try) refused() bool { return Request{Code: t.code}.Refused() }

// trail is every attempt, in one run, at one object's writes (the object
// itself, or a subresource of it: "echoes/status Echo/hello").
type trail struct {
	object string // "Deployment/echo-hello"
	tries  []try
}

// trailOf gathers the attempts of reqs at resource's object, and marks the
// ones a watch event may have brought: a delivery to the same replica,
// since the attempt before, about Echo echo or an object named after it
// (its Deployment, ReplicaSets and Pods: echo-<name>…).
func trailOf(reqs []Request, deliveries []Delivery, resource, object, echo string) trail {
	tr := trail{object: object}
	related := func(obj string) bool {
		_, name, _ := strings.Cut(obj, "/")
		return obj == "Echo/"+echo || strings.HasPrefix(name, "echo-"+echo)
	}
	var prev time.Time
	for _, q := range reqs {
		if !q.Write() || q.Housekeeping() || q.Resource != resource || q.Object != object {
			continue
		}
		t := try{at: q.Time, verb: q.Verb, code: q.Code}
		if !prev.IsZero() {
			for _, d := range deliveries {
				if d.Replica == q.Replica && d.Time.After(prev) && !d.Time.After(q.Time) && related(d.Object) {
					t.woken = true
					break
				}
			}
		}
		tr.tries = append(tr.tries, t)
		prev = q.Time
	}
	return tr
}

// retries are the waits before the attempts that followed a refusal with no
// event in between, in order: the operator's own backoff. next is when,
// at that pace, the try after the last was due (zero: no pace seen): twice
// the last such wait, doubled again for each refusal after it, as the
// default limiters double the wait on every failure of an object, an
// event's too.
func (tr trail) retries() (waits []time.Duration, next time.Time) {
	var wait time.Duration // the wait after the latest refusal, as far as seen
	for i, t := range tr.tries {
		switch {
		case i > 0 && tr.tries[i-1].refused() && !t.woken:
			waits = append(waits, t.at.Sub(tr.tries[i-1].at))
			wait = 2 * waits[len(waits)-1]
		case t.refused() && wait > 0:
			wait *= 2
		}
		if t.refused() && wait > 0 {
			next = t.at.Add(wait)
		}
	}
	return waits, next
}

// refusedCount is how many attempts were refused.
func (tr trail) refusedCount() int {
	n := 0
	for _, t := range tr.tries {
		if t.refused() {
			n++
		}
	}
	return n
}

// lastRefused is the last attempt if it was refused (nothing came after it).
func (tr trail) lastRefused() (try, bool) {
	if len(tr.tries) == 0 {
		return try{}, false
	}
	last := tr.tries[len(tr.tries)-1]
	return last, last.refused()
}

// fate is what became of a run's refused writes at the object it is stuck
// on, judged when the run did not converge.
type fate struct {
	// backingOff: the last attempt was refused, and the retries before it
	// waited longer each time: it is retrying, slowly (a warning).
	backingOff bool
	// dropped: the last attempt was refused and nothing shows a retry to
	// come.
	dropped bool
	line    string // what the requests show, for the verdict
}

// judgeTrail reads the trail of the object a run is stuck on: ended is when
// the fault ended, deadline when the judging window closed.
func judgeTrail(tr trail, ended, deadline time.Time) fate {
	last, refused := tr.lastRefused()
	if !refused {
		return fate{}
	}
	waits, next := tr.retries()
	write := fmt.Sprintf("%s %s", last.verb, tr.object)
	when := fmt.Sprintf("%s, %s before the fault ended", clock(last.at), secs(ended.Sub(last.at)))
	if last.at.After(ended) {
		when = fmt.Sprintf("%s, %s after the fault ended", clock(last.at), secs(last.at.Sub(ended)))
	}
	if n := len(waits); n >= 2 && waits[n-1] > waits[0] {
		due := fmt.Sprintf("was due about %s, %s after the judging window closed", clock(next), secs(next.Sub(deadline)))
		if !next.After(deadline) {
			due = fmt.Sprintf("was due about %s but had not come when the window closed (a failure an event brings doubles the wait too)", clock(next))
		}
		return fate{backingOff: true, line: fmt.Sprintf(
			"it was retrying, not dropping: %s was refused %d times and tried again %d times with no event in between, "+
				"the waits growing from %s to %s (backoff); the last try, at %s, was refused too, and the next, at that pace, %s. "+
				"controller-runtime's and client-go's default limiter doubles an object's wait from 5ms on each failure, up to 1000s",
			write, tr.refusedCount(), n, ms(waits[0]), ms(waits[n-1]), when, due)}
	}
	retried := "none was tried again before an event came"
	if len(waits) == 1 {
		retried = "one was tried again, once"
	}
	return fate{dropped: true, line: fmt.Sprintf("of the %d refused attempts at %s %s; the last, at %s (answered %d), was never tried again",
		tr.refusedCount(), write, retried, when, last.code)}
}

// clock is t as the operator's log stamps it, to the millisecond.
func clock(t time.Time) string { return t.Format("15:04:05.000") }

// ms is d rounded for reading: "5ms", "1.28s".
func ms(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

// retriedCount is how many of the refused writes in reqs another attempt at
// the same object (and subresource) followed, whatever brought it.
func retriedCount(reqs []Request) int {
	pending := map[string]int{} // refusals not yet followed, by object
	n := 0
	for _, q := range reqs {
		if !q.Write() || q.Housekeeping() {
			continue
		}
		key := q.Resource + " " + q.Object
		n += pending[key]
		pending[key] = 0
		if q.Refused() {
			pending[key] = 1
		}
	}
	return n
}
