package trace

import "strings"

// Verb is the request's verb of an api.request ("get", "patch"), the
// kubectl command of a kubectl event ("get echoes"), or the verb of the
// request a fault touched.
func (e Event) Verb() string {
	switch p := e.Payload.(type) {
	case Request:
		return p.Verb
	case Command:
		return p.Verb
	case Injection:
		return p.Verb
	}
	return ""
}

// Resource is the resource of an api.request, api.watch_event or
// fault.injected ("deployments", "echoes/status", "discovery"), or the kind
// an informer event is of ("Echo").
func (e Event) Resource() string {
	switch p := e.Payload.(type) {
	case Request:
		return p.Resource
	case WatchEvent:
		return p.Resource
	case Informer:
		return p.Resource
	case Injection:
		return p.Resource
	}
	return ""
}

// Code is the HTTP code of an api.request (0 if it had none: the client
// left) or the one a fault answered with, or the exit code of a kubectl or
// process.exit event.
func (e Event) Code() int {
	switch p := e.Payload.(type) {
	case Request:
		return p.Code
	case Command:
		return p.Code
	case Injection:
		return p.Code
	case Process:
		if p.Code != nil {
			return *p.Code
		}
	}
	return 0
}

// IsWrite says whether e is an API request that asks to change something.
func (e Event) IsWrite() bool { return e.Kind == APIRequest && IsWriteVerb(e.Verb()) }

// IsHousekeeping says whether e is an API request about leader election
// or Events: requests that change no Echo's children.
func (e Event) IsHousekeeping() bool {
	return e.Kind == APIRequest && IsHousekeepingResource(e.Resource())
}

// IsLease says whether e is an API request about a Lease.
func (e Event) IsLease() bool { return e.Kind == APIRequest && e.Resource() == ResourceLeases }

// IsLeaseRenewal says whether e is a successful update of a Lease: its
// holder renewing it (or taking it).
func (e Event) IsLeaseRenewal() bool {
	return e.IsLease() && e.Verb() == VerbUpdate && e.Code() == 200
}

// Resources an operator's housekeeping requests are about.
const (
	ResourceLeases = "leases"
	ResourceEvents = "events"
)

// Verbs of api.request that are compared with by name.
const (
	VerbWatch  = "watch"
	VerbUpdate = "update"
)

// IsWriteVerb says whether a request with this verb changes the cluster.
func IsWriteVerb(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// IsHousekeepingResource says whether requests about resource (with or
// without a subresource, "leases" or "leases/status") are leader election
// or Events.
func IsHousekeepingResource(resource string) bool {
	r, _, _ := strings.Cut(resource, "/")
	return r == ResourceLeases || r == ResourceEvents
}

// Echo is the name of the Echo a world event is about (drift.*,
// echo.converged, field.handover), or "".
func (e Event) Echo() string {
	switch p := e.Payload.(type) {
	case Drift:
		return p.Echo
	case Convergence:
		return p.Echo
	case Ownership:
		return p.Echo
	}
	return ""
}
