package lessons

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kkloud/rlab/operators/echo"
)

// checkSpec is what a lesson says of a check: the arguments it takes and
// the sentence the student reads. How it is evaluated is lessons/checks',
// under the same name (its test holds the two tables to the same names).
type checkSpec struct {
	args spec
	// words says what it waits for, after "every style: " (see
	// Cond.DescribeIn), every English fragment through s.f.
	words func(s say, a Args) string
}

// CondOperatorCheck grades the student's operator with rlab check's checks.
const CondOperatorCheck = "operator_check"

// CondProjectTest runs go test in the student's Go project.
const CondProjectTest = "project_test"

// CondManifests reads the manifests of the student's Go project: its RBAC
// and CRD written from its markers (controller-gen).
const CondManifests = "manifests"

// checks are the checks a lesson can name.
var checks = map[string]checkSpec{
	CondProjectTest: {
		args: spec{required: argTypes{"operator": tOperator, "tests": tTests}, optional: argTypes{"needs_gc": tBool, "fails_with": tProject}},
		words: func(s say, a Args) string {
			w := s.f("go test passes %s in its project", strings.Join(a.List("tests"), ", "))
			if a.Bool("needs_gc") {
				w += s.f(", and fails them without the garbage collector")
			}
			if a.File("fails_with").Name != "" {
				w += s.f(", and fails them on the lesson's broken version (%s)", a.File("fails_with").Name)
			}
			return w
		},
	},
	CondManifests: {
		args: spec{required: argTypes{"operator": tOperator}},
		words: func(s say, a Args) string {
			return s.f("its project's config/rbac grants what its markers ask for, and config/crd/bases holds the Echo CRD")
		},
	},
	"shipped": {
		args: spec{required: argTypes{"operator": tOperator}},
		words: func(s say, a Args) string {
			return s.f("%s runs in the cluster: a pod of its Deployment made requests, read from the apiserver's audit log", a.Str("operator"))
		},
	},
	"unshipped": {
		args: spec{required: argTypes{"operator": tOperator}},
		words: func(s say, a Args) string {
			return s.f("%s runs on this machine again: every replica runs, and no pod of its Deployment is left", a.Str("operator"))
		},
	},
	CondOperatorCheck: {
		args: spec{required: argTypes{"operator": tOperator, "checks": tChecks}},
		words: func(s say, a Args) string {
			return s.f("passes rlab check's %s", strings.Join(a.List("checks"), ", "))
		},
	},
	"echo_status": {
		args:  spec{required: argTypes{"style": tStyle, "name": tName, "ready": tString}},
		words: func(s say, a Args) string { return s.f("Echo %s reports ready %s", a.Str("name"), a.Str("ready")) },
	},
	"status_current": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "current": tBool}},
		words: func(s say, a Args) string {
			if a.Bool("current") {
				return s.f("Echo %s's status is about its current spec (observedGeneration = generation)", a.Str("name"))
			}
			return s.f("Echo %s's status is about an older spec (observedGeneration < generation)", a.Str("name"))
		},
	},
	"echo_condition": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "type": tString, "status": tString}},
		words: func(s say, a Args) string {
			return s.f("Echo %s has condition %s %s", a.Str("name"), a.Str("type"), a.Str("status"))
		},
	},
	"status_behind": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string {
			return s.f("every pod of Echo %s is ready and its status.ready says otherwise", a.Str("name"))
		},
	},
	"replicas_owner": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "manager": tName}},
		words: func(s say, a Args) string {
			return s.f("field manager %s owns spec.replicas of Deployment %s", a.Str("manager"), echo.DeploymentName(a.Str("name")))
		},
	},
	"handovers": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}, optional: argTypes{"min": tInt, "max": tInt}},
		words: func(s say, a Args) string {
			return s.f("spec.replicas of Deployment %s changes owners%s", echo.DeploymentName(a.Str("name")), s.want(a))
		},
	},
	"echo_absent": {
		args:  spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string { return s.f("Echo %s is gone", a.Str("name")) },
	},
	"echoes_ready": {
		args: spec{required: argTypes{"style": tStyle, "prefix": tName, "count": tInt}},
		words: func(s say, a Args) string {
			n, _ := a.Int("count")
			return s.f("all %d Echoes %s report every replica ready, their Deployments up to date", n, setNames(a.Str("prefix"), n))
		},
	},
	"echoes_converged": {
		args: spec{required: argTypes{"style": tStyle, "prefix": tName, "count": tInt},
			optional: argTypes{"min": tDuration, "max": tDuration, "faster_than": tName}},
		words: func(s say, a Args) string {
			n, _ := a.Int("count")
			took, than := "", ""
			switch mn, mx := a.Dur("min"), a.Dur("max"); {
			case mn > 0 && mx > 0:
				took = s.f(", from the first created to the last converged in %s to %s", mn, mx)
			case mn > 0:
				took = s.f(", from the first created to the last converged in %s or more", mn)
			case mx > 0:
				took = s.f(", from the first created to the last converged within %s", mx)
			}
			if other := a.Str("faster_than"); other != "" {
				than = s.f(", sooner than the Echoes %s-* did", other)
			}
			return s.f("all %d Echoes %s converge after their creation%s%s", n, setNames(a.Str("prefix"), n), took, than)
		},
	},
	"echoes_absent": {
		args: spec{required: argTypes{"style": tStyle, "prefix": tName}},
		words: func(s say, a Args) string {
			return s.f("no Echo %s-* is left, nor its Deployment", a.Str("prefix"))
		},
	},
	"deployment_replicas": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "replicas": tInt}, optional: argTypes{"ready": tBool}},
		words: func(s say, a Args) string {
			n, _ := a.Int("replicas")
			if a.Bool("ready") {
				return s.f("Deployment %s asks for %d replicas, all ready", echo.DeploymentName(a.Str("name")), n)
			}
			return s.f("Deployment %s asks for %d replicas", echo.DeploymentName(a.Str("name")), n)
		},
	},
	"deployment_absent": {
		args:  spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string { return s.f("Deployment %s is gone", echo.DeploymentName(a.Str("name"))) },
	},
	"owned": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string {
			return s.f("Deployment %s is controlled by Echo %s", echo.DeploymentName(a.Str("name")), a.Str("name"))
		},
	},
	"orphaned": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string {
			return s.f("Deployment %s is left running with no owner", echo.DeploymentName(a.Str("name")))
		},
	},
	"converged": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string {
			return s.f("the Deployment and status of Echo %s catch up with its spec", a.Str("name"))
		},
	},
	"noticed": {
		args:  spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string { return s.f("a reconcile of Echo %s after the edit", a.Str("name")) },
	},
	"drift_repaired": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}, optional: argTypes{"what": tString}},
		words: func(s say, a Args) string {
			if what := a.Str("what"); what != "" {
				return s.f("the operator repairs the %s of Deployment %s", what, echo.DeploymentName(a.Str("name")))
			}
			return s.f("the operator repairs the drift of Deployment %s", echo.DeploymentName(a.Str("name")))
		},
	},
	"gc_collected": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string {
			return s.f("the garbage collector removes Deployment %s", echo.DeploymentName(a.Str("name")))
		},
	},
	"new_leader": {
		args: spec{required: argTypes{"style": tGoStyle}, optional: argTypes{"min": tDuration, "max": tDuration}},
		words: func(s say, a Args) string {
			switch mn, mx := a.Dur("min"), a.Dur("max"); {
			case mn > 0 && mx > 0:
				return s.f("another replica takes the Lease, not before %s after the old leader's last renewal, within %s of the leader stopping", mn, mx)
			case mn > 0:
				return s.f("another replica takes the Lease, not before %s after the old leader's last renewal of the leader stopping", mn)
			case mx > 0:
				return s.f("another replica takes the Lease, within %s of the leader stopping", mx)
			}
			return s.f("another replica takes the Lease")
		},
	},
	"leader_lost": {
		args:  spec{required: argTypes{"style": tGoStyle}},
		words: func(s say, _ Args) string { return s.f("the leader loses the Lease") },
	},
	"campaigning": {
		args:  spec{required: argTypes{"style": tGoStyle}},
		words: func(s say, _ Args) string { return s.f("every standby tries for the Lease") },
	},
	"client_limit": {
		args: spec{required: argTypes{"style": tGoStyle, "qps": tQPS}, optional: argTypes{"burst": tInt}},
		words: func(s say, a Args) string {
			// As limitWords says it, a sentence for each of its shapes.
			qps := float64(a.QPS("qps"))
			b, hasBurst := a.Int("burst")
			switch q := strconv.FormatFloat(qps, 'f', -1, 64); {
			case qps < 0:
				return s.f("every replica reports the client limit none")
			case hasBurst && b >= 0:
				return s.f("every replica reports the client limit %s/s burst %d", q, b)
			default:
				return s.f("every replica reports the client limit %s/s", q)
			}
		},
	},
	"replicas_running": {
		args:  spec{required: argTypes{"style": tStyle}},
		words: func(s say, _ Args) string { return s.f("every replica runs") },
	},
	"connected": {
		args: spec{required: argTypes{"style": tStyle}},
		words: func(s say, _ Args) string {
			return s.f("every replica reaches the apiserver, no partition, slowdown or fault")
		},
	},
	"replicas_paused": {
		args:  spec{required: argTypes{"style": tStyle}},
		words: func(s say, _ Args) string { return s.f("every replica is frozen") },
	},
	"restarted": {
		args:  spec{required: argTypes{"style": tStyle}},
		words: func(s say, _ Args) string { return s.f("every replica restarted and the leader reconciled") },
	},
	"you_asked": {
		args: spec{optional: argTypes{"verbs": tStrings, "resource": tString, "code": tInt, "min": tInt}},
		words: func(s say, a Args) string {
			on, answered := s.request(a)
			what := s.f("a request%s%s", on, answered)
			if v := a.List("verbs"); len(v) > 0 {
				what = s.f("a %s request%s%s", strings.Join(v, "/"), on, answered)
			}
			if mn, ok := a.Int("min"); ok && mn > 1 {
				what = s.f("%d× %s", mn, what)
			}
			return s.f("%s, through rlab env's kubeconfig", what)
		},
	},
	"standby_watches": {
		args: spec{required: argTypes{"style": tStyle}, optional: argTypes{"min": tInt, "max": tInt, "over": tDuration}},
		words: func(s say, a Args) string {
			return s.f("a standby's watches of Echoes%s%s", s.over(a), s.want(a))
		},
	},
	"api_requests": {
		args: spec{required: argTypes{"style": tStyle},
			optional: argTypes{"verbs": tStrings, "resource": tString, "code": tInt, "min": tInt, "max": tInt, "over": tDuration}},
		words: func(s say, a Args) string {
			on, answered := s.request(a)
			if v := a.List("verbs"); len(v) > 0 {
				return s.f("%s requests%s%s%s%s", strings.Join(v, "/"), on, answered, s.over(a), s.want(a))
			}
			return s.f("API requests%s%s%s%s", on, answered, s.over(a), s.want(a))
		},
	},
	"faults_injected": {
		args: spec{required: argTypes{"style": tStyle, "fault": tFaultKind}, optional: argTypes{"min": tInt, "max": tInt}},
		words: func(s say, a Args) string {
			return s.f("requests or watch events touched by the %s fault%s", a.Str("fault"), s.want(a))
		},
	},
	"informer_updates": {
		args: spec{required: argTypes{"style": tGoStyle, "resource": tResource, "name": tName},
			optional: argTypes{"change": tChange, "filtered": tBool, "min": tInt, "max": tInt, "event": tEvent}},
		words: func(s say, a Args) string {
			// The event (tEvent: add, update or delete) and the change
			// (tChange: spec or status), each of its own words.
			var what string
			switch ev, c := a.Str("event"), a.Str("change"); {
			case ev == "add" && c != "":
				what = s.f("%s adds", c)
			case ev == "add":
				what = s.f("adds")
			case ev == "delete" && c != "":
				what = s.f("%s deletes", c)
			case ev == "delete":
				what = s.f("deletes")
			case c != "":
				what = s.f("%s updates", c)
			default:
				what = s.f("updates")
			}
			obj := a.Str("resource") + " " + a.Str("name")
			if a.Str("resource") == "Deployment" {
				obj = "Deployment " + echo.DeploymentName(a.Str("name"))
			}
			if a.Bool("filtered") {
				return s.f("%s of %s filtered out by a predicate%s", what, obj, s.want(a))
			}
			return s.f("%s of %s let through to the queue%s", what, obj, s.want(a))
		},
	},
	"reconciles_after_edit": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}, optional: argTypes{"min": tInt, "max": tInt, "cause": tString}},
		words: func(s say, a Args) string {
			if c := a.Str("cause"); c != "" {
				return s.f("reconciles of Echo %s caused by %s%s", a.Str("name"), c, s.want(a))
			}
			return s.f("reconciles of Echo %s%s", a.Str("name"), s.want(a))
		},
	},
	"coalesced": {
		args: spec{required: argTypes{"style": tGoStyle, "name": tName}},
		words: func(s say, a Args) string {
			return s.f("one reconcile answers several queued events for Echo %s", a.Str("name"))
		},
	},
	"retries": {
		args: spec{required: argTypes{"style": tGoStyle, "name": tName, "min": tInt}},
		words: func(s say, a Args) string {
			n, _ := a.Int("min")
			return s.f("at least %d retries of Echo %s, each after a longer backoff", n, a.Str("name"))
		},
	},
	"flapping": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "min": tInt}},
		words: func(s say, a Args) string {
			n, _ := a.Int("min")
			return s.f("the message of Deployment %s changed and put back at least %d times", echo.DeploymentName(a.Str("name")), n)
		},
	},
	"deployment_message": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}, optional: argTypes{"message": tString}},
		words: func(s say, a Args) string {
			if _, ok := a["message"]; ok {
				return s.f("Deployment %s carries the message %q, which Echo %s wants", echo.DeploymentName(a.Str("name")), a.Str("message"), a.Str("name"))
			}
			return s.f("Deployment %s carries Echo %s's message", echo.DeploymentName(a.Str("name")), a.Str("name"))
		},
	},
	"has_finalizer": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string {
			return s.f("Echo %s carries the finalizer %s", a.Str("name"), echo.Finalizer)
		},
	},
	"registered": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string {
			return s.f("ConfigMap %s lists Echo %s", echo.RegistryName, a.Str("name"))
		},
	},
	"unregistered": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string {
			return s.f("ConfigMap %s no longer lists Echo %s", echo.RegistryName, a.Str("name"))
		},
	},
	"echo_deleting": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string {
			return s.f("Echo %s is being deleted, held by a finalizer", a.Str("name"))
		},
	},
	"finalized": {
		args: spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(s say, a Args) string {
			return s.f("the operator cleans up after Echo %s and it goes", a.Str("name"))
		},
	},
}

// Describe says in words what a check waits for, one condition a line.
func (c *Check) Describe() string { return c.DescribeIn(nil) }

// DescribeIn is Describe in co's language (English for a nil co).
func (c *Check) DescribeIn(co *Course) string {
	s := say{co}
	var parts []string
	for _, cond := range c.Conds {
		parts = append(parts, cond.DescribeIn(co))
	}
	out := strings.Join(parts, "\n")
	if c.Hold > 0 {
		out += "\n" + s.f("all of it holding for %s", c.Hold)
	}
	return out
}

// Describe says in a sentence what one condition waits for.
func (c Cond) Describe() string { return c.DescribeIn(nil) }

// DescribeIn is Describe in co's language (English for a nil co).
func (c Cond) DescribeIn(co *Course) string {
	s := say{co}
	return s.f("%s: %s", s.who(c.Args), checks[c.Kind].words(s, c.Args))
}

// say prints a check's words in a Course's language. Every English
// fragment goes through f whole, so that a translator can reorder it
// (TestCheckWordsTranslated holds each language to having them all).
type say struct{ c *Course }

// f is fmt.Sprintf of format's translation, or of format itself when the
// Course (or its Checks) lacks one.
func (s say) f(format string, args ...any) string {
	if s.c != nil {
		if t := s.c.Checks[format]; t != "" {
			format = t
		}
	}
	return fmt.Sprintf(format, args...)
}

// who names the styles a condition or an action is about, for a sentence
// in English (an action's words are not translated).
func who(a Args) string { return say{}.who(a) }

// who names the styles a condition is about, for a sentence.
func (s say) who(a Args) string {
	if op := a.Str("operator"); op != "" {
		return s.f("operator %s", op)
	}
	switch st := a.Str("style"); st {
	case "":
		return s.f("you")
	case StyleAll:
		return s.f("every style")
	case StyleGo:
		return s.f("both Go styles")
	default:
		return st
	}
}

// want says what the min and max arguments want, as bounds does, for a
// sentence: "" when there are neither.
func (s say) want(a Args) string {
	mn, hasMin := a.Int("min")
	mx, hasMax := a.Int("max")
	switch {
	case hasMin && hasMax:
		return s.f(" (want ≥%d and ≤%d)", mn, mx)
	case hasMin:
		return s.f(" (want ≥%d)", mn)
	case hasMax:
		return s.f(" (want ≤%d)", mx)
	}
	return ""
}

// request says the resource and the code a request is asked for, for a
// sentence: " on echoes", " answered 403", each "" when not given.
func (s say) request(a Args) (on, answered string) {
	if r := a.Str("resource"); r != "" {
		on = s.f(" on %s", r)
	}
	if c, ok := a.Int("code"); ok {
		answered = s.f(" answered %d", c)
	}
	return on, answered
}

// over says the over argument, for a sentence: "" when not given.
func (s say) over(a Args) string {
	if d := a.Dur("over"); d > 0 {
		return s.f(" over %s", d)
	}
	return ""
}

// CheckNames are the checks a lesson can name, sorted.
func CheckNames() []string { return sortedKeys(checks) }
