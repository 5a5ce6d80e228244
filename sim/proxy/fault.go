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
)

// FaultKind names a fault.
type FaultKind string

// The faults. Delay, N, P, Code and the filters mean what Fault says for
// each.
const (
	// FaultStale holds every watch event Delay before the replica gets it:
	// its cache lags behind the apiserver, and reads from it are old.
	FaultStale FaultKind = "stale"
	// FaultUnobserved delivers, of the watch events that arrive within
	// Delay of each other's window, only each object's latest; the ones
	// before it are dropped. Bookmarks pass, and resourceVersions stay in
	// order (what is kept keeps its place).
	FaultUnobserved FaultKind = "unobserved"
	// FaultConflict answers matching updates and patches 409 Conflict
	// itself, as the apiserver does when the resourceVersion is old.
	FaultConflict FaultKind = "conflict"
	// FaultError answers matching requests with Code itself (500, or 429
	// with Retry-After).
	FaultError FaultKind = "error"
	// FaultLatency holds matching requests Delay before forwarding them.
	FaultLatency FaultKind = "latency"
	// FaultCrash kills the replica (Options.Kill) as its Nth matching
	// write succeeds upstream, before the answer reaches it: the state a
	// reconcile with several writes leaves half done. It fires once.
	FaultCrash FaultKind = "crash"
	// FaultLease holds the replica's Lease requests Delay before
	// forwarding them: past the renew deadline, the leader gives up.
	FaultLease FaultKind = "lease"
	// FaultPartition refuses every request for Delay (the partition of
	// SetMode(Refuse), ended by itself).
	FaultPartition FaultKind = "partition"
	// FaultDisconnect closes the replica's open watches mid-flight; with
	// a Delay, every watch it opens from then on too, Delay after it
	// starts. The HTTP/2 stream is reset, not ended: client-go's reflector
	// reports an error and lists again.
	FaultDisconnect FaultKind = "disconnect"
)

// Help says in a line what the fault does, for rlab do's help.
func (k FaultKind) Help() string {
	switch k {
	case FaultStale:
		return "every watch event reaches the replica DURATION late: its cache lags behind the apiserver"
	case FaultUnobserved:
		return "of the watch events within DURATION, each object's latest alone reaches the replica"
	case FaultConflict:
		return "updates and patches answered 409 Conflict by rlab (n=N every Nth, p=P each with probability P)"
	case FaultError:
		return "writes answered code=500 (or 502, 503, 504, 429) by rlab, p=0.5 unless n= or p= says; retry-after=D adds the header client-go waits out"
	case FaultLatency:
		return "requests (but Leases' and Events'; verbs=..., resources=...) held DURATION before they are forwarded"
	case FaultCrash:
		return "the replica killed as its Nth write succeeds, before it sees the answer"
	case FaultLease:
		return "the replica's Lease requests held DURATION (5s: past the built-in operators' 3s renew deadline)"
	case FaultPartition:
		return "every request refused (503) for DURATION"
	case FaultDisconnect:
		return "the open watches closed mid-flight (DURATION: every new one too, DURATION after it starts)"
	}
	return ""
}

// Describe says in a line what f does, its parameters spelt out.
func (f Fault) Describe() string {
	d := f.Delay.String()
	switch f.Kind {
	case FaultStale:
		return "every watch event reaches the replicas " + d + " late: their caches lag behind the apiserver"
	case FaultUnobserved:
		return "of the watch events within " + d + ", each object's latest alone reaches the replicas"
	case FaultConflict:
		if f.N == 1 {
			return "every update and patch answered 409 Conflict by rlab"
		}
		if f.N > 0 {
			return fmt.Sprintf("every %s update or patch answered 409 Conflict by rlab", ordinal(f.N))
		}
		return fmt.Sprintf("each update or patch answered 409 Conflict by rlab with probability %g", f.P)
	case FaultError:
		if f.N == 1 {
			return fmt.Sprintf("every write answered %d by rlab", f.Code)
		}
		if f.N > 0 {
			return fmt.Sprintf("every %s write answered %d by rlab", ordinal(f.N), f.Code)
		}
		return fmt.Sprintf("each write answered %d by rlab with probability %g", f.Code, f.P)
	case FaultLatency:
		return "every request held " + d + " before it is forwarded"
	case FaultCrash:
		if f.N == 1 {
			return "the first replica to write killed as the write succeeds, before it sees the answer"
		}
		return fmt.Sprintf("the first replica to make its %s write killed as it succeeds, before it sees the answer", ordinal(f.N))
	case FaultLease:
		return "the replicas' Lease requests held " + d
	case FaultPartition:
		return "every request refused (503) for " + d
	case FaultDisconnect:
		if f.Delay > 0 {
			return "the open watches cut mid-flight, and every new one " + d + " after it starts"
		}
		return "the open watches cut mid-flight"
	}
	return f.String()
}

// ordinal is "1st", "2nd", "3rd", "4th" …
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// FaultKinds are every fault, in the order help lists them.
var FaultKinds = []FaultKind{FaultStale, FaultUnobserved, FaultConflict, FaultError, FaultLatency,
	FaultCrash, FaultLease, FaultPartition, FaultDisconnect}

// Fault is one fault and its parameters.
type Fault struct {
	Kind FaultKind
	// Delay: stale (each event held), unobserved (the window), latency
	// and lease (each request held), partition (how long), disconnect
	// (each new watch closed this long after it starts; 0: only the open
	// ones, once).
	Delay time.Duration
	// N (conflict, error, crash): every Nth matching request since the
	// fault was set is hit (crash: the Nth, once). P (conflict, error):
	// each matching request is hit with probability P. At most one of N
	// and P.
	N int
	P float64
	// Code (error): 500, 502, 503, 504 or 429.
	Code int
	// RetryAfter (error): the Retry-After header and the Status's
	// RetryAfterSeconds; 0 sends none.
	RetryAfter time.Duration
	// Verbs and Resources narrow which requests it touches (conflict,
	// error, latency, crash); empty: the kind's default verbs, and every
	// resource but leases and events (a Lease's renewals and the event
	// recorder are the lease fault's and nobody's). A resource without a
	// "/" matches its subresources too: "echoes" is also "echoes/status".
	Verbs     []string
	Resources []string
	// Seed makes P's draws repeat: the same seed, the same requests hit.
	Seed uint64
}

// defaultVerbs are the verbs a kind touches when Verbs is empty.
func (f Fault) defaultVerbs() []string {
	switch f.Kind {
	case FaultConflict:
		return []string{"update", "patch"}
	case FaultError, FaultCrash:
		return writeVerbs
	}
	return nil // every verb
}

var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// isWrite says whether a verb changes something.
func isWrite(verb string) bool { return slices.Contains(writeVerbs, verb) }

// ParseFault reads a fault as typed: KIND[:DURATION][,key=value]…, e.g.
// "stale:2s", "unobserved:3s", "conflict,p=0.5", "conflict,n=3",
// "error,code=429,retry-after=1s,verbs=update+patch,resources=deployments",
// "latency:300ms,verbs=get", "crash,n=2", "lease:5s", "partition:10s",
// "disconnect", "disconnect:10s". Keys: n, p, code, retry-after, verbs,
// resources, seed (lists joined with +).
func ParseFault(s string) (Fault, error) {
	parts := strings.Split(strings.TrimSpace(s), ",")
	head, dur, hasDur := strings.Cut(parts[0], ":")
	f := Fault{Kind: FaultKind(head)}
	if !slices.Contains(FaultKinds, f.Kind) {
		return Fault{}, fmt.Errorf("fault %q: no fault %q; want one of %s", s, head, kindNames())
	}
	if hasDur {
		d, err := time.ParseDuration(dur)
		if err != nil {
			return Fault{}, fmt.Errorf("fault %q: duration %q: %w", s, dur, err)
		}
		f.Delay = d
	}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Fault{}, fmt.Errorf("fault %q: %q is not key=value", s, kv)
		}
		var err error
		switch k {
		case "n":
			f.N, err = strconv.Atoi(v)
		case "p":
			f.P, err = strconv.ParseFloat(v, 64)
		case "code":
			f.Code, err = strconv.Atoi(v)
		case "retry-after":
			f.RetryAfter, err = time.ParseDuration(v)
		case "seed":
			f.Seed, err = strconv.ParseUint(v, 10, 64)
		case "verbs":
			f.Verbs = strings.Split(v, "+")
		case "resources":
			f.Resources = strings.Split(v, "+")
		default:
			return Fault{}, fmt.Errorf("fault %q: unknown key %q; want n, p, code, retry-after, verbs, resources or seed", s, k)
		}
		if err != nil {
			return Fault{}, fmt.Errorf("fault %q: %s: %w", s, k, err)
		}
	}
	f = f.withDefaults()
	if err := f.Validate(); err != nil {
		return Fault{}, fmt.Errorf("fault %q: %w", s, err)
	}
	return f, nil
}

// ParseFaultArg reads what rlab do fault and the screen's fault prompt
// take: a fault (ParseFault), or off (every fault: Kind ""), or off:KIND.
func ParseFaultArg(v string) (f Fault, off bool, err error) {
	v = strings.TrimSpace(v)
	if v == "off" {
		return Fault{}, true, nil
	}
	if kind, ok := strings.CutPrefix(v, "off:"); ok {
		if !slices.Contains(FaultKinds, FaultKind(kind)) {
			return Fault{}, false, fmt.Errorf("off:%s: no fault %q; want one of %s", kind, kind, kindNames())
		}
		return Fault{Kind: FaultKind(kind)}, true, nil
	}
	f, err = ParseFault(v)
	return f, false, err
}

func kindNames() string {
	names := make([]string, len(FaultKinds))
	for i, k := range FaultKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// withDefaults fills what a kind needs and was not given.
func (f Fault) withDefaults() Fault {
	switch f.Kind {
	case FaultStale, FaultUnobserved:
		if f.Delay == 0 {
			f.Delay = 2 * time.Second
		}
	case FaultConflict:
		if f.N == 0 && f.P == 0 {
			f.P = 0.5
		}
	case FaultError:
		if f.N == 0 && f.P == 0 {
			f.P = 0.5
		}
		if f.Code == 0 {
			f.Code = http.StatusInternalServerError
		}
	case FaultCrash:
		if f.N == 0 && f.P == 0 {
			f.N = 1
		}
	case FaultLease:
		if f.Delay == 0 {
			f.Delay = 5 * time.Second // past the operators' 3 s renew deadline
		}
	case FaultPartition:
		if f.Delay == 0 {
			f.Delay = 10 * time.Second
		}
	}
	return f
}

// Validate says what is wrong with f, in the words ParseFault reads.
func (f Fault) Validate() error {
	if !slices.Contains(FaultKinds, f.Kind) {
		return fmt.Errorf("no fault %q; want one of %s", f.Kind, kindNames())
	}
	switch {
	case f.Delay < 0:
		return errors.New("a duration must not be negative")
	case f.N < 0:
		return errors.New("n must be 1 or more")
	case f.P < 0 || f.P > 1:
		return fmt.Errorf("p=%g: want a probability from 0 to 1", f.P)
	case f.N > 0 && f.P > 0:
		return errors.New("give n (every Nth request) or p (each with a probability), not both")
	}
	switch f.Kind {
	case FaultStale, FaultUnobserved, FaultLatency, FaultLease, FaultPartition:
		if f.Delay == 0 {
			return fmt.Errorf("%s needs a duration: %s:2s", f.Kind, f.Kind)
		}
	case FaultError:
		if !slices.Contains([]int{429, 500, 502, 503, 504}, f.Code) {
			return fmt.Errorf("code=%d: want 500, 502, 503, 504 or 429", f.Code)
		}
	case FaultCrash:
		if f.P > 0 {
			return errors.New("crash takes n (the Nth write), not p")
		}
	}
	for _, v := range f.Verbs {
		if !slices.Contains([]string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}, v) {
			return fmt.Errorf("verb %q: want get, list, watch, create, update, patch, delete or deletecollection", v)
		}
	}
	if f.Kind == FaultConflict {
		for _, v := range f.Verbs {
			if v != "update" && v != "patch" {
				return fmt.Errorf("verb %q: a conflict is an update's or a patch's (an old resourceVersion)", v)
			}
		}
	}
	return nil
}

// String is f as ParseFault reads it, its defaults spelt out.
func (f Fault) String() string {
	s := string(f.Kind)
	if f.Delay > 0 {
		s += ":" + f.Delay.String()
	}
	if f.N > 0 {
		s += ",n=" + strconv.Itoa(f.N)
	}
	if f.P > 0 {
		s += ",p=" + strconv.FormatFloat(f.P, 'g', -1, 64)
	}
	if f.Kind == FaultError {
		s += ",code=" + strconv.Itoa(f.Code)
	}
	if f.RetryAfter > 0 {
		s += ",retry-after=" + f.RetryAfter.String()
	}
	if len(f.Verbs) > 0 {
		s += ",verbs=" + strings.Join(f.Verbs, "+")
	}
	if len(f.Resources) > 0 {
		s += ",resources=" + strings.Join(f.Resources, "+")
	}
	if f.Seed != 0 {
		s += ",seed=" + strconv.FormatUint(f.Seed, 10)
	}
	return s
}

// matches says whether f touches a request (not which of them: hit does).
func (f Fault) matches(c call) bool {
	if c.verb == "" || c.resource == "discovery" || strings.HasPrefix(c.resource, "/") {
		return false // not a resource request
	}
	verbs := f.Verbs
	if len(verbs) == 0 {
		verbs = f.defaultVerbs()
	}
	if verbs != nil && !slices.Contains(verbs, c.verb) {
		return false
	}
	base, _, _ := strings.Cut(c.resource, "/")
	if f.Kind == FaultLease {
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
	Fault
	mu    sync.Mutex
	seen  int
	rng   *rand.Rand
	fired bool        // crash: done
	timer *time.Timer // partition: its end
}

func arm(f Fault) *armed {
	seed := f.Seed
	if seed == 0 {
		seed = 1 // a fixed default, so that a run repeats
	}
	return &armed{Fault: f, rng: rand.New(rand.NewPCG(seed, seed))}
}

// hit says whether the fault touches this matching request.
func (a *armed) hit(c call) bool {
	if !a.matches(c) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen++
	switch {
	case a.Kind == FaultCrash:
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
type faults map[FaultKind]*armed

// SetFault turns f on for this replica, in place of any fault of its kind.
// Partition shares the mode with SetMode: whichever heals last heals.
// Turning on stale or unobserved closes the replica's open watches once, so
// that every watch goes through the fault from then on (the client watches
// again, client-go after a new list); so does disconnect, whose purpose it
// is. Crash needs Options.Kill.
func (p *Proxy) SetFault(f Fault) error {
	f = f.withDefaults()
	if err := f.Validate(); err != nil {
		return err
	}
	if f.Kind == FaultCrash && p.kill == nil {
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
	keep := f.Kind != FaultDisconnect || f.Delay > 0 // a bare disconnect acts once
	if keep {
		next[f.Kind] = a
	} else {
		delete(next, f.Kind)
	}
	p.faults.Store(&next)
	if f.Kind == FaultPartition {
		// Under the same hold as the store: the timer's endFault finds
		// this fault, however short the partition.
		p.setModeLocked(Refuse)
		a.timer = time.AfterFunc(f.Delay, func() { p.endFault(a) })
	}
	p.mu.Unlock()

	p.publishFault(f, true)
	switch f.Kind {
	case FaultStale, FaultUnobserved, FaultDisconnect:
		p.closeWatches()
	}
	if !keep {
		p.publishFault(f, false)
	}
	return nil
}

// ClearFault turns off the fault of a kind, if on.
func (p *Proxy) ClearFault(k FaultKind) {
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
	if a.Kind == FaultPartition && !p.closed {
		p.setModeLocked(Normal)
	}
	p.mu.Unlock()
	p.publishFault(a.Fault, false)
}

// Faults are the faults on now, by kind.
func (p *Proxy) Faults() []Fault {
	var out []Fault
	for _, k := range FaultKinds {
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

func (p *Proxy) publishFault(f Fault, on bool) {
	p.log.Info("proxy fault", "fault", f.String(), "on", on)
	p.enqueue(trace.Event{Time: time.Now(), Source: p.source, Kind: trace.FaultSet,
		Payload: trace.FaultSwitch{Fault: string(f.Kind), Spec: f.String(), On: on}})
}

// injected publishes what a fault did to one request.
func (p *Proxy) injected(k FaultKind, c call, in trace.Injection) {
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
	for _, k := range []FaultKind{FaultLease, FaultLatency} {
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
	if a := set[FaultConflict]; a != nil && a.hit(x.call) {
		x.code = http.StatusConflict
		p.injected(FaultConflict, x.call, trace.Injection{Code: x.code})
		writeFault(w, x.call, x.code, 0)
		return false
	}
	if a := set[FaultError]; a != nil && a.hit(x.call) {
		x.code = a.Code
		p.injected(FaultError, x.call, trace.Injection{Code: x.code})
		writeFault(w, x.call, x.code, a.RetryAfter)
		return false
	}
	return true
}

// afterWrite runs when a write's answer arrives from upstream, before the
// replica gets it: the crash fault kills the replica there.
func (p *Proxy) afterWrite(x *exchange, code int) {
	set := p.faultSet()
	a := set[FaultCrash]
	if a == nil || code >= 300 || !a.hit(x.call) {
		return
	}
	p.injected(FaultCrash, x.call, trace.Injection{Code: code})
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
