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
	"slices"
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
	// backingOff: the last attempt was refused, the operator was seen to
	// retry (an attempt after a refusal with no event in between), and its
	// next try, at the pace of a doubling limiter, was due after the
	// judging window: it is retrying, slowly (a warning).
	backingOff bool
	// dropped: the last attempt was refused and nothing shows a retry to
	// come: none was ever seen, or the next was due inside the window and
	// never came.
	dropped bool
	line    string // what the requests show, for the verdict
}

// The default limiter of controller-runtime's and client-go's workqueues:
// an object's wait starts at limiterBase and doubles on each failure, up to
// limiterCap (workqueue.DefaultTypedControllerRateLimiter).
const (
	limiterBase = 5 * time.Millisecond
	limiterCap  = 1000 * time.Second
)

// limiterWait is that limiter's wait after n failures of an object: the
// first waits limiterBase.
func limiterWait(n int) time.Duration {
	if n > 30 {
		return limiterCap
	}
	return min(limiterBase<<max(n-1, 0), limiterCap)
}

// judgeTrail reads the trail of the object a run is stuck on: failures is
// how many of the run's writes were refused (each fails one reconcile of
// the Echo), ended when the fault ended, deadline when the judging window
// closed.
func judgeTrail(tr trail, failures int, ended, deadline time.Time) fate {
	last, refused := tr.lastRefused()
	if !refused {
		return fate{}
	}
	waits, paced := tr.retries()
	write := fmt.Sprintf("%s %s", last.verb, tr.object)
	when := fmt.Sprintf("%s, %s before the fault ended", clock(last.at), secs(ended.Sub(last.at)))
	if last.at.After(ended) {
		when = fmt.Sprintf("%s, %s after the fault ended", clock(last.at), secs(last.at.Sub(ended)))
	}
	if len(waits) == 0 {
		return fate{dropped: true, line: fmt.Sprintf("of the %d refused attempts at %s none was tried again before an event came; "+
			"the last, at %s (answered %d), was never tried again", tr.refusedCount(), write, when, last.code)}
	}
	// The later of two guesses: a doubling limiter after every failure,
	// and the pace of the retries seen.
	failures = max(failures, tr.refusedCount())
	next := last.at.Add(limiterWait(failures))
	if paced.After(next) {
		next = paced
	}
	seen := fmt.Sprintf("%s was refused %d times and tried again %d times with no event in between (waits of %s to %s)",
		write, tr.refusedCount(), len(waits), ms(slices.Min(waits)), ms(slices.Max(waits)))
	if !next.After(deadline) {
		return fate{dropped: true, line: fmt.Sprintf("it retried, then stopped: %s; the last try, at %s, was refused, "+
			"and its next, due about %s (%d failures: a limiter doubling from 5ms waits %s), never came",
			seen, when, clock(next), failures, ms(limiterWait(failures)))}
	}
	return fate{backingOff: true, line: fmt.Sprintf("it was retrying, not dropping: %s; the last try, at %s, was refused too. "+
		"After %d failures a limiter that doubles the wait from 5ms on each, as controller-runtime's and client-go's do, "+
		"waits %s (at most 1000s): its next try was due about %s, %s after the judging window closed",
		seen, when, failures, ms(limiterWait(failures)), clock(next), secs(next.Sub(deadline)))}
}

// clock is t as the operator's log stamps it, to the millisecond.
func clock(t time.Time) string { return t.Format("15:04:05.000") }

// ms is d rounded for reading: "5ms", "1.28s", "163.84s".
func ms(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
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
