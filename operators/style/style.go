// Package style is the vocabulary of Reconcile Lab: the three ways the Echo
// operator is written, a student's own operators (`--operator NAME=COMMAND`),
// and every name derived from one (namespace, labels, trace source, leader
// identity). Nothing else builds these strings.
package style

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Style is one way of writing the Echo operator: a built-in one ("shell",
// "clientgo", "runtime") or a student's own, named on the command line
// ("mine"). A Style is also how its replicas, namespace and Lease are named.
type Style string

// The three built-in styles, in screen order.
const (
	Shell    Style = "shell"
	ClientGo Style = "clientgo"
	Runtime  Style = "runtime"
)

// All returns the built-in styles in screen order.
func All() []Style { return []Style{Shell, ClientGo, Runtime} }

// Parse returns the built-in style called name.
func Parse(name string) (Style, error) {
	for _, s := range All() {
		if string(s) == name {
			return s, nil
		}
	}
	return "", fmt.Errorf("unknown operator style %q (want shell, clientgo or runtime)", name)
}

// Custom checks the name of a student's own operator: lower-case letters and
// digits, starting with a letter, at most 20, and neither a built-in style
// nor a name rlab's own trace sources use. No dashes, so that the namespace
// "echo-NAME" and the identity "NAME-a-PID" parse back unambiguously.
func Custom(name string) (Style, error) {
	if _, err := Parse(name); err == nil {
		return "", fmt.Errorf("operator name %q is a built-in style: pick another (e.g. \"mine\")", name)
	}
	if !validCustom(name) {
		return "", fmt.Errorf("operator name %q: want 1 to %d lower-case letters and digits, starting with a letter", name, maxCustom)
	}
	return Style(name), nil
}

// maxCustom keeps a custom operator's names short enough for the screen and
// within a DNS label under any prefix.
const maxCustom = 20

// reserved are trace sources of rlab itself, which no operator may be named.
var reserved = []string{"world", "supervisor", "rlab", "proxy"}

func validCustom(name string) bool {
	if name == "" || len(name) > maxCustom || slices.Contains(reserved, name) {
		return false
	}
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// String is the style's name.
func (s Style) String() string { return string(s) }

// Traits is what rlab knows a style does, and so what the screen, the
// lessons and the sandbox may assume of it. Every question about an
// ability is a read of one field, never a comparison of names.
type Traits struct {
	// Title is how the screen names the style.
	Title string
	// Builtin: rlab ships this operator, so knows its RBAC, its flags, its
	// Lease's name and what it writes; a student's own is taken as found.
	Builtin bool
	// Polls: it polls with a new kubectl per call instead of watching: no
	// informer, no workqueue, no shared client limiter, no watches to
	// turn off.
	Polls bool
	// Traces: it emits its own trace events (informer, queue, reconcile,
	// or the poll loop's), so its pipeline can be drawn; otherwise it is
	// seen only from its proxy and the cluster.
	Traces bool
	// ElectsLeader: its replicas elect a leader on a Lease. The shell loop
	// does not: that is what a lesson shows. Of a student's own operator
	// rlab cannot know, so it is not assumed.
	ElectsLeader bool
	// Stages are the pipeline stages the screen draws, in order; nil for
	// a style with no trace of its own.
	Stages []string
	// Colour is the style's colour on the screen.
	Colour Colour
	// Options are the flags of rlab's own operators that this style takes
	// beyond those every style takes (the finalizer, the replicas).
	Options []Option
}

// Option is a flag of rlab's own operators that not every style has.
type Option string

// The options of rlab's own Go operators.
const (
	// Tuning: --workers, --qps and --burst, a Go client's workers and its
	// client-side limit (the shell loop has neither).
	Tuning Option = "tuning"
	// Warmup: --warmup, controller-runtime's EnableWarmup.
	Warmup Option = "warmup"
	// GenerationPredicate: --generation-predicate, controller-runtime's
	// GenerationChangedPredicate.
	GenerationPredicate Option = "generation-predicate"
	// DefaultsCache: --defaults-cache, narrowing controller-runtime's cache
	// of ConfigMaps (client-go's informer is narrowed already).
	DefaultsCache Option = "defaults-cache"
	// Webhook: --webhook-port, controller-runtime's webhook server.
	Webhook Option = "webhook"
)

// Takes says whether the style takes option o.
func (t Traits) Takes(o Option) bool { return slices.Contains(t.Options, o) }

// Colour is a screen colour as hex, for a light and a dark background.
type Colour struct{ Light, Dark string }

// OwnColour is the colour of every student's own operator.
var OwnColour = Colour{"#00875F", "#5FD7AF"}

// Pipeline stages of the Go styles and of the shell loop.
var (
	goStages    = []string{"watch", "informer", "queue", "reconcile", "API"}
	shellStages = []string{"poll", "get", "apply", "patch"}
)

// Traits of the built-in styles. Callers must not modify Stages or Options.
var (
	shellTraits = Traits{Title: "shell loop", Builtin: true, Polls: true, Traces: true,
		Stages: shellStages, Colour: Colour{"#9A5B00", "#F2B84B"}}
	clientGoTraits = Traits{Title: "client-go", Builtin: true, Traces: true, ElectsLeader: true,
		Stages: goStages, Colour: Colour{"#005F87", "#5FD7FF"}, Options: []Option{Tuning}}
	runtimeTraits = Traits{Title: "controller-runtime", Builtin: true, Traces: true, ElectsLeader: true,
		Stages: goStages, Colour: Colour{"#8700AF", "#D787FF"},
		Options: []Option{Tuning, Warmup, GenerationPredicate, DefaultsCache, Webhook}}
)

// Traits are what s does. A student's own operator gets the conservative
// record: not built in, no own trace, no leader election assumed, titled
// by its name, in OwnColour. A switch, not a map: the screen asks for
// every trace event.
func (s Style) Traits() Traits {
	switch s {
	case Shell:
		return shellTraits
	case ClientGo:
		return clientGoTraits
	case Runtime:
		return runtimeTraits
	}
	return Traits{Title: string(s), Colour: OwnColour}
}

// namespacePrefix starts every style's namespace and managed-by label.
const namespacePrefix = "echo-"

// Namespace is the namespace the style's operator watches: "echo-clientgo".
func (s Style) Namespace() string { return namespacePrefix + string(s) }

// ManagedBy is the app.kubernetes.io/managed-by label on what the style
// creates, so that the three Deployments of one Echo can be told apart.
func (s Style) ManagedBy() string { return namespacePrefix + string(s) }

// Operator is the name of the style's identity in the cluster (its user or
// ServiceAccount): "echo-clientgo-operator".
func (s Style) Operator() string { return namespacePrefix + string(s) + "-operator" }

// Source is how a replica signs its trace events: "clientgo/a".
func (s Style) Source(replica string) string { return string(s) + "/" + replica }

// UserAgent is what a replica sends to the apiserver: "echo-clientgo/a".
func (s Style) UserAgent(replica string) string {
	return namespacePrefix + string(s) + "/" + replica
}

// Identity is a replica's leader-election identity <style>-<replica>-<pid>,
// so a student can find the leader's process with kubectl and kill it by hand.
func (s Style) Identity(replica string, pid int) string {
	return string(s) + "-" + replica + "-" + strconv.Itoa(pid)
}

// ParseIdentity splits an identity made by Identity.
func ParseIdentity(id string) (s Style, replica string, pid int, ok bool) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return "", "", 0, false
	}
	pid, err := strconv.Atoi(id[i+1:])
	if err != nil {
		return "", "", 0, false
	}
	j := strings.LastIndexByte(id[:i], '-')
	if j <= 0 || j == i-1 {
		return "", "", 0, false
	}
	return Style(id[:j]), id[j+1 : i], pid, true
}

// FromSource is the style of a trace source ("clientgo/a",
// "proxy/mine/a"), or "" for sources that are not a replica ("world").
func FromSource(source string) Style {
	source = strings.TrimPrefix(source, "proxy/")
	name, replica, ok := strings.Cut(source, "/")
	if !ok || replica == "" {
		return ""
	}
	return named(name)
}

// named is the style called name, built-in or custom, or "".
func named(name string) Style {
	if s, err := Parse(name); err == nil {
		return s
	}
	if validCustom(name) {
		return Style(name)
	}
	return ""
}

// FromNamespace is the style whose namespace is ns, with or without a
// shared cluster's prefix ("rlab-alice-echo-shell" is Shell,
// "echo-mine" is the custom "mine"), or "".
func FromNamespace(ns string) Style {
	i := strings.LastIndex(ns, namespacePrefix)
	if i < 0 || i > 0 && ns[i-1] != '-' {
		return ""
	}
	return named(ns[i+len(namespacePrefix):])
}

// Prefix starts the namespaces of one sandbox on a shared cluster, so that
// two people on one cluster never collide: "rlab-alice-" puts the shell loop
// in "rlab-alice-echo-shell". "" (a sandbox's own cluster) is no prefix.
type Prefix string

// Namespace is style s's namespace under the prefix.
func (p Prefix) Namespace(s Style) string { return string(p) + s.Namespace() }

// Label is the prefix as a label value (no trailing dash), which marks the
// namespaces a sandbox created so that a later start can find them.
func (p Prefix) Label() string { return strings.TrimSuffix(string(p), "-") }

// maxPrefix keeps the longest namespace, Prefix+"echo-clientgo", within
// the 63 characters of a DNS label.
const maxPrefix = 63 - len(namespacePrefix+"clientgo")

// ParsePrefix checks a namespace prefix: lower-case letters, digits and
// dashes, starting with a letter, ending with a dash; "" is no prefix.
func ParsePrefix(p string) (Prefix, error) {
	if p == "" {
		return "", nil
	}
	if len(p) > maxPrefix {
		return "", fmt.Errorf("namespace prefix %q is longer than %d characters", p, maxPrefix)
	}
	if !strings.HasSuffix(p, "-") {
		return "", fmt.Errorf("namespace prefix %q must end with a dash, e.g. %q", p, p+"-")
	}
	for i, r := range p {
		ok := r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '-')
		if !ok {
			return "", fmt.Errorf("namespace prefix %q: want lower-case letters, digits and dashes, starting with a letter", p)
		}
	}
	return Prefix(p), nil
}

// UserPrefix derives a prefix from a user name: "Alice.B" gives "rlab-alice-b-".
func UserPrefix(user string) Prefix {
	var b strings.Builder
	for _, r := range strings.ToLower(user) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" {
		name = "user"
	}
	if max := maxPrefix - len("rlab--"); len(name) > max {
		name = strings.TrimRight(name[:max], "-")
	}
	return Prefix("rlab-" + name + "-")
}
