package proxy

// Faults: what a replica's proxy does to its traffic on purpose, so that a
// student sees an operator meet the failures real controllers meet (a cache
// behind the apiserver, events never seen, conflicts, server errors, a crash
// between two writes, a Lease it cannot renew, a watch cut mid-flight).
// Every fault acts on one replica's own traffic only: rlab's clients (the
// world, lessons, the student's proxy) do not pass through it. Every
// request or watch event a fault touches is published as a
// trace.FaultInjected event, and turning one on or off as trace.FaultSet.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kkloud/rlab/operators/trace"
	"github.com/kkloud/rlab/sim/fault"
)

// matches says whether f touches a request (not which of them: hit does).
func matches(f fault.Fault, c call) bool {
	if c.verb == "" || c.resource == "discovery" || strings.HasPrefix(c.resource, "/") {
		return false // not a resource request
	}
	verbs := f.Verbs
	if len(verbs) == 0 {
		verbs = f.DefaultVerbs()
	}
	if verbs != nil && !slices.Contains(verbs, c.verb) {
		return false
	}
	base, _, _ := strings.Cut(c.resource, "/")
	if f.Kind == fault.Lease {
		return base == "leases"
	}
	if len(f.Resources) == 0 {
		return base != "leases" && base != "events"
	}
	for _, r := range f.Resources {
		if r == c.resource || (!strings.Contains(r, "/") && r == base) {
			return true
		}
	}
	return false
}

// armed is a fault turned on at one proxy, with what it counts.
type armed struct {
	fault.Fault
	mu    sync.Mutex
	seen  int
	rng   *rand.Rand
	fired bool        // crash: done
	timer *time.Timer // partition: its end
}

func arm(f fault.Fault) *armed {
	seed := f.Seed
	if seed == 0 {
		seed = 1 // a fixed default, so that a run repeats
	}
	return &armed{Fault: f, rng: rand.New(rand.NewPCG(seed, seed))}
}

// hit says whether the fault touches this matching request.
func (a *armed) hit(c call) bool {
	if !matches(a.Fault, c) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen++
	switch {
	case a.Kind == fault.Crash:
		if a.fired || a.seen != a.N {
			return false
		}
		a.fired = true
		return true
	case a.N > 0:
		return a.seen%a.N == 0
	case a.P > 0:
		return a.rng.Float64() < a.P
	}
	return true // latency, lease: every matching request
}

// faults is the set turned on at one proxy, replaced whole on each change
// so that the request path reads it with one atomic load.
type faults map[fault.Kind]*armed

// SetFault turns f on for this replica, in place of any fault of its kind.
// Partition shares the mode with SetMode: whichever heals last heals.
// Turning on stale or unobserved closes the replica's open watches once, so
// that every watch goes through the fault from then on (the client watches
// again, client-go after a new list); so does disconnect, whose purpose it
// is. Crash needs Options.Kill.
func (p *Proxy) SetFault(f fault.Fault) error {
	f = f.WithDefaults()
	if err := f.Validate(); err != nil {
		return err
	}
	if f.Kind == fault.Crash && p.kill == nil {
		return errors.New("crash: this proxy cannot kill its replica")
	}
	a := arm(f)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errClosed
	}
	next := faults{}
	for k, v := range p.faultSet() {
		next[k] = v
	}
	if old := next[f.Kind]; old != nil && old.timer != nil {
		old.timer.Stop() // if it fired already, its endFault finds another fault and does nothing
	}
	keep := f.Kind != fault.Disconnect || f.Delay > 0 // a bare disconnect acts once
	if keep {
		next[f.Kind] = a
	} else {
		delete(next, f.Kind)
	}
	p.faults.Store(&next)
	if f.Kind == fault.Partition {
		// Under the same hold as the store: the timer's endFault finds
		// this fault, however short the partition.
		p.setModeLocked(Refuse)
		a.timer = time.AfterFunc(f.Delay, func() { p.endFault(a) })
	}
	p.mu.Unlock()

	p.publishFault(f, true)
	switch f.Kind {
	case fault.Stale, fault.Unobserved, fault.Disconnect:
		p.closeWatches()
	}
	if !keep {
		p.publishFault(f, false)
	}
	return nil
}

// ClearFault turns off the fault of a kind, if on.
func (p *Proxy) ClearFault(k fault.Kind) {
	p.mu.Lock()
	a := p.faultSet()[k]
	p.mu.Unlock()
	if a != nil {
		p.endFault(a)
	}
}

// ClearFaults turns every fault off.
func (p *Proxy) ClearFaults() {
	for _, f := range p.Faults() {
		p.ClearFault(f.Kind)
	}
}

// endFault removes a (if it is still the fault of its kind) and undoes
// what it did: a partition it ends heals the proxy, a partition of
// SetMode's too (the two share the mode).
func (p *Proxy) endFault(a *armed) {
	p.mu.Lock()
	cur := p.faultSet()
	if cur[a.Kind] != a {
		p.mu.Unlock()
		return
	}
	next := faults{}
	for k, v := range cur {
		if v != a {
			next[k] = v
		}
	}
	p.faults.Store(&next)
	if a.timer != nil {
		a.timer.Stop()
	}
	if a.Kind == fault.Partition && !p.closed {
		p.setModeLocked(Normal)
	}
	p.mu.Unlock()
	p.publishFault(a.Fault, false)
}

// Faults are the faults on now, by kind.
func (p *Proxy) Faults() []fault.Fault {
	var out []fault.Fault
	for _, k := range fault.Kinds {
		if a := p.faultSet()[k]; a != nil {
			out = append(out, a.Fault)
		}
	}
	return out
}

// faultSet is the faults on now; nil when none ever was.
func (p *Proxy) faultSet() faults {
	if f := p.faults.Load(); f != nil {
		return *f
	}
	return nil
}

func (p *Proxy) publishFault(f fault.Fault, on bool) {
	p.log.Info("proxy fault", "fault", f.String(), "on", on)
	p.enqueue(trace.Event{Time: time.Now(), Source: p.source, Kind: trace.FaultSet,
		Payload: trace.FaultSwitch{Fault: string(f.Kind), Spec: f.String(), On: on}})
}

// injected publishes what a fault did to one request.
func (p *Proxy) injected(k fault.Kind, c call, in trace.Injection) {
	in.Fault, in.Verb, in.Resource = string(k), c.verb, c.resource
	p.enqueue(trace.Event{Time: time.Now(), Source: p.source, Kind: trace.FaultInjected,
		Namespace: c.namespace, Object: c.object, Payload: in})
}

// beforeForward applies the request faults (latency, lease, conflict,
// error) to a request about to be forwarded. It reports false if a fault
// answered it (x.code is set) or the client left while it was held.
func (p *Proxy) beforeForward(ctx context.Context, w http.ResponseWriter, x *exchange) bool {
	set := p.faultSet()
	if len(set) == 0 {
		return true
	}
	for _, k := range []fault.Kind{fault.Lease, fault.Latency} {
		a := set[k]
		if a == nil || !a.hit(x.call) {
			continue
		}
		p.injected(k, x.call, trace.Injection{DelayMS: a.Delay.Milliseconds()})
		t := time.NewTimer(a.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			x.code = -1
			return false
		case <-p.base.Done(): // closing: nobody is left to answer
			t.Stop()
			x.code = -1
			return false
		}
	}
	if a := set[fault.Conflict]; a != nil && a.hit(x.call) {
		x.code = http.StatusConflict
		p.injected(fault.Conflict, x.call, trace.Injection{Code: x.code})
		writeFault(w, x.call, x.code, 0)
		return false
	}
	if a := set[fault.Error]; a != nil && a.hit(x.call) {
		x.code = a.Code
		p.injected(fault.Error, x.call, trace.Injection{Code: x.code})
		writeFault(w, x.call, x.code, a.RetryAfter)
		return false
	}
	return true
}

// afterWrite runs when a write's answer arrives from upstream, before the
// replica gets it: the crash fault kills the replica there.
func (p *Proxy) afterWrite(x *exchange, code int) {
	set := p.faultSet()
	a := set[fault.Crash]
	if a == nil || code >= 300 || !a.hit(x.call) {
		return
	}
	p.injected(fault.Crash, x.call, trace.Injection{Code: code})
	if err := p.kill(); err != nil {
		p.log.Warn("crash fault: kill", "err", err)
	}
	p.endFault(a)
}

// writeFault answers a request as the apiserver would have: a Status
// client-go turns into the same typed error (apierrors.IsConflict,
// IsInternalError, IsTooManyRequests …).
func writeFault(w http.ResponseWriter, c call, code int, retryAfter time.Duration) {
	name := c.object
	if _, n, ok := strings.Cut(c.object, "/"); ok {
		name = n
	}
	st := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     int32(code),
		Details:  &metav1.StatusDetails{Name: name, Kind: c.resource},
	}
	switch code {
	case http.StatusConflict:
		st.Reason = metav1.StatusReasonConflict
		st.Message = fmt.Sprintf("Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again (conflict injected by rlab)", c.resource, name)
	case http.StatusTooManyRequests:
		st.Reason = metav1.StatusReasonTooManyRequests
		st.Message = "too many requests (injected by rlab)"
	case http.StatusServiceUnavailable:
		st.Reason = metav1.StatusReasonServiceUnavailable
		st.Message = "service unavailable (injected by rlab)"
	case http.StatusGatewayTimeout:
		st.Reason = metav1.StatusReasonTimeout
		st.Message = "timeout (injected by rlab)"
	default:
		st.Reason = metav1.StatusReasonInternalError
		st.Message = "internal error (injected by rlab)"
	}
	if retryAfter > 0 {
		secs := max(int(retryAfter.Round(time.Second)/time.Second), 1)
		st.Details.RetryAfterSeconds = int32(secs)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	writeStatusObject(w, st)
}
