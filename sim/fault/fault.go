// Package fault is the vocabulary of the faults a replica's proxy
// (sim/proxy) injects: their kinds, how they are typed (Parse) and said
// (String, Describe, Help). It imports nothing of rlab, so that the course
// and rlab do parse and word a fault without linking the proxy.
package fault

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind names a fault.
type Kind string

// The faults. Delay, N, P, Code and the filters mean what Fault says for
// each.
const (
	// Stale holds every watch event Delay before the replica gets it:
	// its cache lags behind the apiserver, and reads from it are old.
	Stale Kind = "stale"
	// Unobserved delivers, of the watch events that arrive within
	// Delay of each other's window, only each object's latest; the ones
	// before it are dropped. Bookmarks pass, and resourceVersions stay in
	// order (what is kept keeps its place).
	Unobserved Kind = "unobserved"
	// Conflict answers matching updates and patches 409 Conflict
	// itself, as the apiserver does when the resourceVersion is old.
	Conflict Kind = "conflict"
	// Error answers matching requests with Code itself (500, or 429
	// with Retry-After).
	Error Kind = "error"
	// Latency holds matching requests Delay before forwarding them.
	Latency Kind = "latency"
	// Crash kills the replica (Options.Kill) as its Nth matching
	// write succeeds upstream, before the answer reaches it: the state a
	// reconcile with several writes leaves half done. It fires once.
	Crash Kind = "crash"
	// Lease holds the replica's Lease requests Delay before
	// forwarding them: past the renew deadline, the leader gives up.
	Lease Kind = "lease"
	// Partition refuses every request for Delay (the partition of
	// SetMode(Refuse), ended by itself).
	Partition Kind = "partition"
	// Disconnect closes the replica's open watches mid-flight; with
	// a Delay, every watch it opens from then on too, Delay after it
	// starts. The HTTP/2 stream is reset, not ended: client-go's reflector
	// reports an error and lists again.
	Disconnect Kind = "disconnect"
)

// Help says in a line what the fault does, for rlab do's help.
func (k Kind) Help() string {
	switch k {
	case Stale:
		return "every watch event reaches the replica DURATION late: its cache lags behind the apiserver"
	case Unobserved:
		return "of the watch events within DURATION, each object's latest alone reaches the replica"
	case Conflict:
		return "updates and patches answered 409 Conflict by rlab (n=N every Nth, p=P each with probability P)"
	case Error:
		return "writes answered code=500 (or 502, 503, 504, 429) by rlab, p=0.5 unless n= or p= says; retry-after=D adds the header client-go waits out"
	case Latency:
		return "requests (but Leases' and Events'; verbs=..., resources=...) held DURATION before they are forwarded"
	case Crash:
		return "the replica killed as its Nth write succeeds, before it sees the answer"
	case Lease:
		return "the replica's Lease requests held DURATION (5s: past the built-in operators' 3s renew deadline)"
	case Partition:
		return "every request refused (503) for DURATION"
	case Disconnect:
		return "the open watches closed mid-flight (DURATION: every new one too, DURATION after it starts)"
	}
	return ""
}

// Describe says in a line what f does, its parameters spelt out.
func (f Fault) Describe() string {
	d := f.Delay.String()
	switch f.Kind {
	case Stale:
		return "every watch event reaches the replicas " + d + " late: their caches lag behind the apiserver"
	case Unobserved:
		return "of the watch events within " + d + ", each object's latest alone reaches the replicas"
	case Conflict:
		if f.N == 1 {
			return "every update and patch answered 409 Conflict by rlab"
		}
		if f.N > 0 {
			return fmt.Sprintf("every %s update or patch answered 409 Conflict by rlab", ordinal(f.N))
		}
		return fmt.Sprintf("each update or patch answered 409 Conflict by rlab with probability %g", f.P)
	case Error:
		if f.N == 1 {
			return fmt.Sprintf("every write answered %d by rlab", f.Code)
		}
		if f.N > 0 {
			return fmt.Sprintf("every %s write answered %d by rlab", ordinal(f.N), f.Code)
		}
		return fmt.Sprintf("each write answered %d by rlab with probability %g", f.Code, f.P)
	case Latency:
		return "every request held " + d + " before it is forwarded"
	case Crash:
		if f.N == 1 {
			return "the first replica to write killed as the write succeeds, before it sees the answer"
		}
		return fmt.Sprintf("the first replica to make its %s write killed as it succeeds, before it sees the answer", ordinal(f.N))
	case Lease:
		return "the replicas' Lease requests held " + d
	case Partition:
		return "every request refused (503) for " + d
	case Disconnect:
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

// Kinds are every fault, in the order help lists them.
var Kinds = []Kind{Stale, Unobserved, Conflict, Error, Latency,
	Crash, Lease, Partition, Disconnect}

// Fault is one fault and its parameters.
type Fault struct {
	Kind Kind
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

// DefaultVerbs are the verbs a kind touches when Verbs is empty.
func (f Fault) DefaultVerbs() []string {
	switch f.Kind {
	case Conflict:
		return []string{"update", "patch"}
	case Error, Crash:
		return writeVerbs
	}
	return nil // every verb
}

var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// IsWrite says whether a verb changes something.
func IsWrite(verb string) bool { return slices.Contains(writeVerbs, verb) }

// Parse reads a fault as typed: KIND[:DURATION][,key=value]…, e.g.
// "stale:2s", "unobserved:3s", "conflict,p=0.5", "conflict,n=3",
// "error,code=429,retry-after=1s,verbs=update+patch,resources=deployments",
// "latency:300ms,verbs=get", "crash,n=2", "lease:5s", "partition:10s",
// "disconnect", "disconnect:10s". Keys: n, p, code, retry-after, verbs,
// resources, seed (lists joined with +).
func Parse(s string) (Fault, error) {
	parts := strings.Split(strings.TrimSpace(s), ",")
	head, dur, hasDur := strings.Cut(parts[0], ":")
	f := Fault{Kind: Kind(head)}
	if !slices.Contains(Kinds, f.Kind) {
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
	f = f.WithDefaults()
	if err := f.Validate(); err != nil {
		return Fault{}, fmt.Errorf("fault %q: %w", s, err)
	}
	return f, nil
}

// ParseArg reads what rlab do fault and the screen's fault prompt
// take: a fault (Parse), or off (every fault: Kind ""), or off:KIND.
func ParseArg(v string) (f Fault, off bool, err error) {
	v = strings.TrimSpace(v)
	if v == "off" {
		return Fault{}, true, nil
	}
	if kind, ok := strings.CutPrefix(v, "off:"); ok {
		if !slices.Contains(Kinds, Kind(kind)) {
			return Fault{}, false, fmt.Errorf("off:%s: no fault %q; want one of %s", kind, kind, kindNames())
		}
		return Fault{Kind: Kind(kind)}, true, nil
	}
	f, err = Parse(v)
	return f, false, err
}

func kindNames() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// WithDefaults fills what a kind needs and was not given (SetFault takes a Fault built in Go, not only one Parse read).
func (f Fault) WithDefaults() Fault {
	switch f.Kind {
	case Stale, Unobserved:
		if f.Delay == 0 {
			f.Delay = 2 * time.Second
		}
	case Conflict:
		if f.N == 0 && f.P == 0 {
			f.P = 0.5
		}
	case Error:
		if f.N == 0 && f.P == 0 {
			f.P = 0.5
		}
		if f.Code == 0 {
			f.Code = http.StatusInternalServerError
		}
	case Crash:
		if f.N == 0 && f.P == 0 {
			f.N = 1
		}
	case Lease:
		if f.Delay == 0 {
			f.Delay = 5 * time.Second // past the operators' 3 s renew deadline
		}
	case Partition:
		if f.Delay == 0 {
			f.Delay = 10 * time.Second
		}
	}
	return f
}

// Validate says what is wrong with f, in the words Parse reads.
func (f Fault) Validate() error {
	if !slices.Contains(Kinds, f.Kind) {
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
	case Stale, Unobserved, Latency, Lease, Partition:
		if f.Delay == 0 {
			return fmt.Errorf("%s needs a duration: %s:2s", f.Kind, f.Kind)
		}
	case Error:
		if !slices.Contains([]int{429, 500, 502, 503, 504}, f.Code) {
			return fmt.Errorf("code=%d: want 500, 502, 503, 504 or 429", f.Code)
		}
	case Crash:
		if f.P > 0 {
			return errors.New("crash takes n (the Nth write), not p")
		}
	}
	for _, v := range f.Verbs {
		if !slices.Contains([]string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}, v) {
			return fmt.Errorf("verb %q: want get, list, watch, create, update, patch, delete or deletecollection", v)
		}
	}
	if f.Kind == Conflict {
		for _, v := range f.Verbs {
			if v != "update" && v != "patch" {
				return fmt.Errorf("verb %q: a conflict is an update's or a patch's (an old resourceVersion)", v)
			}
		}
	}
	return nil
}

// String is f as Parse reads it, its defaults spelt out.
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
	if f.Kind == Error {
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
