package lessons

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// argType is the type of one argument of an action or a check.
type argType int

const (
	tString   argType = iota
	tName             // a DNS label: an Echo name
	tInt              // a small non-negative integer
	tDuration         // 30s, 250ms
	tBool
	tStyle   // shell, clientgo, runtime; go (both Go styles); all
	tGoStyle // clientgo, runtime, or go: styles with a Lease and watches
	tStrings // a list of words
	tErrKind // an apiserver error reason: invalid, conflict, forbidden
	tMode    // a partition: refuse or hang
)

// spec is what arguments an action or a check takes.
type spec struct {
	required map[string]argType
	optional map[string]argType
}

// expect is accepted by every action: the apiserver must refuse it so.
var expectArg = map[string]argType{"expect_error": tErrKind}

// opSpecs is the closed set of actions autoplay performs, each a sandbox
// action the student can also do by hand.
var opSpecs = map[string]spec{
	"create_echo":          {required: map[string]argType{"name": tName, "message": tString, "replicas": tInt}},
	"delete_echo":          {required: map[string]argType{"name": tName}, optional: map[string]argType{"cascade": tString}},
	"set_replicas":         {required: map[string]argType{"name": tName, "replicas": tInt}},
	"set_message":          {required: map[string]argType{"name": tName, "message": tString}},
	"burst_messages":       {required: map[string]argType{"name": tName, "count": tInt}},
	"annotate":             {required: map[string]argType{"name": tName}, optional: map[string]argType{"for": tDuration, "every": tDuration}},
	"stale_update":         {required: map[string]argType{"name": tName}},
	"delete_deployment":    {required: map[string]argType{"style": tStyle, "name": tName}},
	"scale_deployment":     {required: map[string]argType{"style": tStyle, "name": tName, "replicas": tInt}},
	"watch_owned":          {required: map[string]argType{"style": tGoStyle, "watch": tBool}},
	"kill_leader":          {required: map[string]argType{"style": tGoStyle}},
	"stop_leader":          {required: map[string]argType{"style": tGoStyle}},
	"partition_leader":     {required: map[string]argType{"style": tGoStyle, "mode": tMode}},
	"heal":                 {required: map[string]argType{"style": tGoStyle}},
	"set_latency":          {required: map[string]argType{"style": tStyle, "latency": tString}},
	"role_verbs":           {required: map[string]argType{"style": tStyle, "resource": tString, "verbs": tStrings}},
	"role_reset":           {required: map[string]argType{"style": tStyle}},
	"finalizer":            {required: map[string]argType{"style": tStyle, "on": tBool}},
	"pause_operators":      {required: map[string]argType{"style": tStyle}},
	"add_shell_replica":    {optional: map[string]argType{"suffix": tString}},
	"remove_shell_replica": {},
	"resume_operators":     {required: map[string]argType{"style": tStyle}},
}

// condSpecs is the closed set of checks, over the world model and the trace
// events since the step began.
var condSpecs = map[string]spec{
	// The Echo's status.ready reads ready.
	"echo_status": {required: map[string]argType{"style": tStyle, "name": tName, "ready": tString}},
	// The Echo is gone.
	"echo_absent": {required: map[string]argType{"style": tStyle, "name": tName}},
	// Its Deployment asks for replicas (and, with ready, has them ready).
	"deployment_replicas": {required: map[string]argType{"style": tStyle, "name": tName, "replicas": tInt},
		optional: map[string]argType{"ready": tBool}},
	// Its Deployment is gone.
	"deployment_absent": {required: map[string]argType{"style": tStyle, "name": tName}},
	// Its Deployment is controlled by Echo name.
	"owned": {required: map[string]argType{"style": tStyle, "name": tName}},
	// Its Deployment is still there with no controller owner.
	"orphaned": {required: map[string]argType{"style": tStyle, "name": tName}},
	// The world saw the Echo converge after the action (latency in the detail).
	"converged": {required: map[string]argType{"style": tStyle, "name": tName}},
	// The first reconcile of Echo name after the action, per style: who
	// noticed the change first, and through what.
	"noticed": {required: map[string]argType{"style": tStyle, "name": tName}},
	// The world saw a drift of the Deployment repaired.
	"drift_repaired": {required: map[string]argType{"style": tStyle, "name": tName}, optional: map[string]argType{"what": tString}},
	// The garbage collector removed the Echo's Deployment.
	"gc_collected": {required: map[string]argType{"style": tStyle, "name": tName}},
	// Someone other than the holder at the step's start holds the Lease,
	// taken over after at least min and at most max.
	"new_leader": {required: map[string]argType{"style": tGoStyle}, optional: map[string]argType{"min": tDuration, "max": tDuration}},
	// A replica lost the Lease (not released it).
	"leader_lost": {required: map[string]argType{"style": tGoStyle}},
	// Every replica runs.
	"replicas_running": {required: map[string]argType{"style": tStyle}},
	// Every replica is frozen (SIGSTOP).
	"replicas_paused": {required: map[string]argType{"style": tStyle}},
	// Every replica was restarted since the step began and the leader (any
	// replica, for the shell loop) has reconciled since.
	"restarted": {required: map[string]argType{"style": tStyle}},
	// API requests through the style's proxies, counted since the step
	// began (or over the first `over` of it).
	"api_requests": {required: map[string]argType{"style": tStyle},
		optional: map[string]argType{"verbs": tStrings, "resource": tString, "code": tInt, "min": tInt, "max": tInt, "over": tDuration}},
	// Reconciles of Echo name since the step began.
	"reconciles_after_edit": {required: map[string]argType{"style": tStyle, "name": tName},
		optional: map[string]argType{"min": tInt, "max": tInt}},
	// Some reconcile answered several queued events at once.
	"coalesced": {required: map[string]argType{"style": tGoStyle, "name": tName}},
	// The world saw the Deployment's message drift from the Echo's and be
	// put back at least min times: two writers undoing each other.
	"flapping": {required: map[string]argType{"style": tStyle, "name": tName, "min": tInt}},
	// The Deployment carries the Echo's message.
	"deployment_message": {required: map[string]argType{"style": tStyle, "name": tName}},
	// The Echo carries the operators' finalizer.
	"has_finalizer": {required: map[string]argType{"style": tStyle, "name": tName}},
	// The registry ConfigMap lists the Echo under its current uid.
	"registered": {required: map[string]argType{"style": tStyle, "name": tName}},
	// The registry ConfigMap does not list the Echo.
	"unregistered": {required: map[string]argType{"style": tStyle, "name": tName}},
	// The Echo is being deleted and a finalizer still holds it.
	"echo_deleting": {required: map[string]argType{"style": tStyle, "name": tName}},
	// An operator cleaned up after the deleted Echo, removed its finalizer,
	// and the Echo is gone.
	"finalized": {required: map[string]argType{"style": tStyle, "name": tName}},
	// Failed reconciles were retried at least min times, each after a
	// longer backoff.
	"retries": {required: map[string]argType{"style": tGoStyle, "name": tName, "min": tInt}},
}

// Args are validated arguments.
type Args map[string]any

// Str is a string argument, "" if absent.
func (a Args) Str(k string) string { s, _ := a[k].(string); return s }

// Int is an integer argument and whether it was given.
func (a Args) Int(k string) (int, bool) { n, ok := a[k].(int); return n, ok }

// Dur is a duration argument, 0 if absent.
func (a Args) Dur(k string) time.Duration { d, _ := a[k].(time.Duration); return d }

// Bool is a boolean argument, false if absent.
func (a Args) Bool(k string) bool { b, _ := a[k].(bool); return b }

// List is a list argument.
func (a Args) List(k string) []string { l, _ := a[k].([]string); return l }

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)
	wordRE = regexp.MustCompile(`^[a-z][a-z0-9./_-]*$`)
)

// Styles by group.
const (
	StyleAll = "all"
	StyleGo  = "go"
)

var (
	allStyles = []string{"shell", "clientgo", "runtime"}
	goStyles  = []string{"clientgo", "runtime"}
)

// ExpandStyle is the styles a style argument means.
func ExpandStyle(s string) []string {
	switch s {
	case StyleAll:
		return allStyles
	case StyleGo:
		return goStyles
	}
	return []string{s}
}

// args validates the arguments mapping of one action or check.
func (p *parser) args(n *yaml.Node, what string, sp spec, isOp bool) Args {
	opt := map[string]argType{}
	for k, t := range sp.optional {
		opt[k] = t
	}
	if isOp {
		for k, t := range expectArg {
			opt[k] = t
		}
	}
	req := sortedKeys(sp.required)
	f := p.fields(n, what, req, sortedKeys(opt))
	if f == nil {
		return nil
	}
	out := Args{}
	before := len(p.errs)
	for k, v := range f {
		t, ok := sp.required[k]
		if !ok {
			t = opt[k]
		}
		if val, ok := p.value(v, what+": "+k, t); ok {
			out[k] = val
		}
	}
	if mn, ok := out.Int("min"); ok {
		if mx, ok := out.Int("max"); ok && mx < mn {
			p.errorf(n, "%s: max (%d) is less than min (%d)", what, mx, mn)
		}
	}
	if mn, mx := out.Dur("min"), out.Dur("max"); mn > 0 && mx > 0 && mx < mn {
		p.errorf(n, "%s: max (%s) is less than min (%s)", what, mx, mn)
	}
	if l := out.Str("latency"); l != "" {
		if d, err := time.ParseDuration(l); err != nil || d < 0 || d > 5*time.Second {
			p.errorf(f["latency"], "%s: latency: want 0s to 5s, got %q", what, l)
		}
	}
	if c := out.Str("cascade"); c != "" && c != "background" && c != "orphan" {
		p.errorf(f["cascade"], "%s: cascade: want background or orphan, got %q", what, c)
	}
	if len(p.errs) > before {
		return nil
	}
	return out
}

// value reads one scalar (or list) of type t.
func (p *parser) value(n *yaml.Node, what string, t argType) (any, bool) {
	if t == tStrings {
		if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
			p.errorf(n, "%s: want a list of words, got %s", what, kindName(n))
			return nil, false
		}
		var out []string
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode || !wordRE.MatchString(c.Value) {
				p.errorf(c, "%s: want a word, got %s", what, kindName(c))
				return nil, false
			}
			out = append(out, c.Value)
		}
		return out, true
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, "%s: want a value, got %s", what, kindName(n))
		return nil, false
	}
	v := n.Value
	bad := func(want string) (any, bool) {
		p.errorf(n, "%s: want %s, got %q", what, want, v)
		return nil, false
	}
	switch t {
	case tString:
		if strings.TrimSpace(v) == "" {
			return bad("text")
		}
		return v, true
	case tName:
		if !nameRE.MatchString(v) {
			return bad("an Echo name (lower-case letters, digits and -, at most 40)")
		}
		return v, true
	case tInt:
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i > 1000 || n.Tag != "!!int" {
			return bad("a whole number from 0 to 1000")
		}
		return i, true
	case tDuration:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxDuration {
			return bad(fmt.Sprintf("a duration between 1ms and %s like 3s", maxDuration))
		}
		return d, true
	case tBool:
		if n.Tag != "!!bool" {
			return bad("true or false")
		}
		return v == "true", true
	case tStyle:
		if v != StyleAll && v != StyleGo && !slices.Contains(allStyles, v) {
			return bad("a style: shell, clientgo, runtime, go or all")
		}
		return v, true
	case tGoStyle:
		if v != StyleGo && !slices.Contains(goStyles, v) {
			return bad("a Go style, with a Lease and watches: clientgo, runtime or go")
		}
		return v, true
	case tErrKind:
		if v != "invalid" && v != "conflict" && v != "forbidden" {
			return bad("invalid, conflict or forbidden")
		}
		return v, true
	case tMode:
		if v != "refuse" && v != "hang" {
			return bad("refuse or hang")
		}
		return v, true
	}
	return bad("a known type")
}
