package lessons

import (
	"fmt"
	"strings"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/sim/fault"
)

// actionSpec is what a lesson says of an action: the arguments it takes
// and the sentence that says what it does. How it is performed is
// lessons/actions', under the same name (its test holds the two tables to
// the same names).
type actionSpec struct {
	args spec
	// words says what it does, after "every style: " if it has a style.
	words func(a Args) string
	// onOperator: its style may be the student's operator instead
	// (operator: mine), as for every check.
	onOperator bool
}

// ActRunOperator swaps in another version of the student's operator (a
// script); ActRunProject, of their Go project.
const (
	ActRunOperator = "run_operator"
	ActRunProject  = "run_project"
	ActShip        = "ship"
	ActReplicas    = "operator_replicas"
	ActUnship      = "unship"
)

// actions are the actions autoplay can perform.
var actions = map[string]actionSpec{
	ActRunOperator: {
		args: spec{required: argTypes{"operator": tOperator, "file": tFile}},
		words: func(a Args) string {
			return "restart it running the lesson's " + a.File("file").Name + ", and wait for its first pass"
		},
	},
	ActRunProject: {
		args: spec{required: argTypes{"operator": tOperator, "project": tProject}},
		words: func(a Args) string {
			return "restart it running the lesson's project with the files of " + a.File("project").Name + ", and wait for its first pass"
		},
	},
	"create_echo": {
		args: spec{required: argTypes{"name": tName, "message": tMessage, "replicas": tInt}, optional: argTypes{"style": tStyle}},
		words: func(a Args) string {
			n, _ := a.Int("replicas")
			return fmt.Sprintf("create Echo %s with %d replicas saying %q", a.Str("name"), n, a.Str("message"))
		},
	},
	"delete_echo": {
		args: spec{required: argTypes{"name": tName}, optional: argTypes{"cascade": tString}},
		words: func(a Args) string {
			if c := a.Str("cascade"); c != "" {
				return fmt.Sprintf("delete Echo %s with --cascade=%s", a.Str("name"), c)
			}
			return "delete Echo " + a.Str("name")
		},
	},
	"create_echoes": {
		args: spec{required: argTypes{"prefix": tName, "count": tInt}, optional: argTypes{"replicas": tInt, "message": tString, "style": tStyle}},
		words: func(a Args) string {
			n, _ := a.Int("count")
			return fmt.Sprintf("create %d Echoes %s at once", n, setNames(a.Str("prefix"), n))
		},
	},
	"delete_echoes": {
		args:  spec{required: argTypes{"prefix": tName}, optional: argTypes{"style": tStyle}},
		words: func(a Args) string { return fmt.Sprintf("delete the Echoes %s-*", a.Str("prefix")) },
	},
	"set_replicas": {
		args: spec{required: argTypes{"name": tName, "replicas": tInt}, optional: argTypes{"style": tStyle}},
		words: func(a Args) string {
			n, _ := a.Int("replicas")
			return fmt.Sprintf("set the replicas of Echo %s to %d", a.Str("name"), n)
		},
	},
	"set_message": {
		args: spec{required: argTypes{"name": tName, "message": tMessage}, optional: argTypes{"style": tStyle}},
		words: func(a Args) string {
			return fmt.Sprintf("set the message of Echo %s to %q", a.Str("name"), a.Str("message"))
		},
	},
	"burst_messages": {
		args: spec{required: argTypes{"name": tName, "count": tInt}},
		words: func(a Args) string {
			n, _ := a.Int("count")
			return fmt.Sprintf("change the message of Echo %s %d times in a row", a.Str("name"), n)
		},
	},
	"wait": {
		args:  spec{required: argTypes{"for": tDuration}},
		words: func(a Args) string { return "wait " + a.Dur("for").String() + " before the next act" },
	},
	"annotate": {
		args: spec{required: argTypes{"name": tName}, optional: argTypes{"for": tDuration, "every": tDuration}},
		words: func(a Args) string {
			s := "annotate Echo " + a.Str("name")
			if d := a.Dur("for"); d > 0 {
				s += fmt.Sprintf(" again and again for %s", d)
			}
			return s
		},
	},
	"stale_update": {
		args: spec{required: argTypes{"name": tName}},
		words: func(a Args) string {
			return fmt.Sprintf("replace Echo %s with a copy whose resourceVersion is no longer current", a.Str("name"))
		},
	},
	"rules_review": {
		args: spec{required: argTypes{"style": tStyle}},
		words: func(Args) string {
			return "ask the apiserver what its ServiceAccount may do (kubectl auth can-i --list)"
		},
	},
	"delete_deployment": {
		args:       spec{required: argTypes{"style": tStyle, "name": tName}},
		words:      func(a Args) string { return "delete Deployment " + echo.DeploymentName(a.Str("name")) },
		onOperator: true,
	},
	"set_status": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "ready": tString}},
		words: func(a Args) string {
			return fmt.Sprintf("write status.ready %q into Echo %s through the status subresource, by hand", a.Str("ready"), a.Str("name"))
		},
		onOperator: true,
	},
	"set_configmap": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "key": tString, "value": tString}},
		words: func(a Args) string {
			return fmt.Sprintf("set %s=%q in ConfigMap %s", a.Str("key"), a.Str("value"), a.Str("name"))
		},
	},
	"delete_configmap": {
		args:  spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(a Args) string { return "delete ConfigMap " + a.Str("name") },
	},
	"scale_deployment": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "replicas": tInt}},
		words: func(a Args) string {
			n, _ := a.Int("replicas")
			return fmt.Sprintf("scale Deployment %s to %d replicas", echo.DeploymentName(a.Str("name")), n)
		},
		onOperator: true,
	},
	"get_deployment": {
		args:       spec{required: argTypes{"style": tStyle, "name": tName}},
		words:      func(a Args) string { return "read Deployment " + echo.DeploymentName(a.Str("name")) },
		onOperator: true,
	},
	"api_resources": {
		words: func(Args) string { return "ask the apiserver which resources it serves (kubectl api-resources)" },
	},
	"explain": {
		words: func(Args) string { return "read the Echo's schema from the apiserver's OpenAPI (kubectl explain)" },
	},
	"get_echo": {
		args:  spec{required: argTypes{"style": tStyle, "name": tName}},
		words: func(a Args) string { return "read Echo " + a.Str("name") },
	},
	"apply_policy": {
		args: spec{required: argTypes{"max": tInt}},
		words: func(a Args) string {
			n, _ := a.Int("max")
			return fmt.Sprintf("apply ValidatingAdmissionPolicy %s (an Echo may ask for %d replicas at most) and its binding", PolicyName, n)
		},
	},
	"delete_policy": {
		words: func(Args) string {
			return fmt.Sprintf("delete ValidatingAdmissionPolicy %s and its binding", PolicyName)
		},
	},
	"webhook": {
		args: spec{required: argTypes{"on": tBool}},
		words: func(a Args) string {
			if a.Bool("on") {
				return fmt.Sprintf("create ValidatingWebhookConfiguration %s: the apiserver calls controller-runtime's webhook for Echoes in its namespace", WebhookName)
			}
			return fmt.Sprintf("delete ValidatingWebhookConfiguration %s", WebhookName)
		},
	},
	"apply_replicas": {
		args: spec{required: argTypes{"style": tStyle, "name": tName, "replicas": tInt, "manager": tName},
			optional: argTypes{"force": tBool, "for": tDuration, "every": tDuration}},
		words: func(a Args) string {
			n, _ := a.Int("replicas")
			s := fmt.Sprintf("apply replicas: %d to Deployment %s as field manager %s", n, echo.DeploymentName(a.Str("name")), a.Str("manager"))
			if a.Bool("force") {
				s += " with --force-conflicts"
			}
			if d := a.Dur("for"); d > 0 {
				s += fmt.Sprintf(", again and again for %s", d)
			}
			return s
		},
		onOperator: true,
	},
	"watch_owned": {
		args: spec{required: argTypes{"style": tGoStyle, "watch": tBool}},
		words: func(a Args) string {
			return fmt.Sprintf("restart the replicas with --watch-owned=%t", a.Bool("watch"))
		},
	},
	"kill_leader": {
		args:  spec{required: argTypes{"style": tGoStyle}},
		words: func(Args) string { return "kill the leader (SIGKILL)" },
	},
	"stop_leader": {
		args:  spec{required: argTypes{"style": tGoStyle}},
		words: func(Args) string { return "stop the leader gracefully (SIGTERM)" },
	},
	"partition_leader": {
		args: spec{required: argTypes{"style": tGoStyle, "mode": tMode}},
		words: func(a Args) string {
			if a.Str("mode") == "hang" {
				return "cut the leader off the apiserver: its requests hang"
			}
			return "cut the leader off the apiserver: its requests are refused"
		},
	},
	"heal": {
		args:  spec{required: argTypes{"style": tGoStyle}},
		words: func(Args) string { return "reconnect every replica to the apiserver" },
	},
	"set_latency": {
		args:  spec{required: argTypes{"style": tStyle, "latency": tString}},
		words: func(a Args) string { return "delay every API request by " + a.Str("latency") },
	},
	"fault": {
		args: spec{required: argTypes{"style": tStyle, "fault": tFault}},
		words: func(a Args) string {
			f, off, _ := fault.ParseArg(a.Str("fault"))
			switch {
			case off && f.Kind == "":
				return "turn every fault off"
			case off:
				return "turn the " + string(f.Kind) + " fault off"
			}
			return "turn the fault " + f.String() + " on: " + f.Describe()
		},
	},
	"role_verbs": {
		args: spec{required: argTypes{"style": tStyle, "resource": tString, "verbs": tStrings}},
		words: func(a Args) string {
			return fmt.Sprintf("let the Role grant only %s on %s", strings.Join(a.List("verbs"), ", "), a.Str("resource"))
		},
	},
	"role_reset": {
		args:  spec{required: argTypes{"style": tStyle}},
		words: func(Args) string { return "give the Role back its rules" },
	},
	"finalizer": restartSpec("--finalizer"),
	"warmup":    restartSpec("--warmup"),
	"generation_predicate": {
		args: spec{required: argTypes{"style": tStyle, "where": tWhere}},
		words: func(a Args) string {
			return "restart the replicas with --generation-predicate=" + a.Str("where")
		},
	},
	"defaults_cache": {
		args: spec{required: argTypes{"style": tStyle, "cache": tDefaultsCache}},
		words: func(a Args) string {
			return "restart the replicas with --defaults-cache=" + a.Str("cache")
		},
	},
	"tune": {
		args:  spec{required: argTypes{"style": tGoStyle}, optional: argTypes{"workers": tInt, "qps": tQPS, "burst": tInt}},
		words: func(a Args) string { return "restart the replicas with " + TuningWords(a) },
	},
	"pause_operators": {
		args:  spec{required: argTypes{"style": tStyle}},
		words: func(Args) string { return "freeze every replica (SIGSTOP)" },
	},
	"resume_operators": {
		args:  spec{required: argTypes{"style": tStyle}},
		words: func(Args) string { return "let every frozen replica go on (SIGCONT)" },
	},
	"add_shell_replica": {
		args: spec{optional: argTypes{"suffix": tString}},
		words: func(a Args) string {
			if s := a.Str("suffix"); s != "" {
				return fmt.Sprintf("start a second shell loop that appends %q to the message", s)
			}
			return "start a second shell loop"
		},
	},
	"remove_shell_replica": {
		words: func(Args) string { return "stop the second shell loop" },
	},
	ActUnship: {
		args: spec{required: argTypes{"operator": tOperator}},
		words: func(a Args) string {
			return "bring " + a.Str("operator") + " back to this machine: delete its Deployment, start its replicas here again"
		},
	},
	ActReplicas: {
		args: spec{required: argTypes{"operator": tOperator, "replicas": tInt}, optional: argTypes{"args": tString}},
		words: func(a Args) string {
			n, _ := a.Int("replicas")
			if args := a.Str("args"); args != "" {
				return fmt.Sprintf("run %s as %d replicas, each with its own proxy, every one with %s added to its command", a.Str("operator"), n, args)
			}
			return fmt.Sprintf("run %s as %d replicas, each with its own proxy", a.Str("operator"), n)
		},
	},
	ActShip: {
		args: spec{required: argTypes{"operator": tOperator}, optional: argTypes{"replicas": tInt}},
		words: func(a Args) string {
			return "ship " + a.Str("operator") + " into the cluster: build its image, load it into the node, deploy it with its config/rbac"
		},
	},
}

// restartSpec is the action that restarts a style's replicas with flag
// (on: true) or without it.
func restartSpec(flag string) actionSpec {
	return actionSpec{
		args:  spec{required: argTypes{"style": tStyle, "on": tBool}},
		words: func(a Args) string { return "restart the replicas " + RestartWith(flag, a.Bool("on")) },
	}
}

// RestartWith says how restartSpec's action restarts the replicas: with
// flag, or without it.
func RestartWith(flag string, on bool) string {
	if on {
		return "with " + flag
	}
	return "without " + flag
}

// Describe says in a sentence what the action does.
func (op Op) Describe() string {
	s := actions[op.Name].words(op.Args)
	if op.Args.Str("style") != "" || op.Args.Str("operator") != "" {
		s = who(op.Args) + ": " + s
	}
	if e := op.Args.Str("expect_error"); e != "" {
		s += ", which the apiserver must refuse (" + e + ")"
	}
	return s
}

// setNames says which Echoes a set holds: "load-001 … load-100".
func setNames(prefix string, n int) string {
	if n <= 1 {
		return SetName(prefix, 1)
	}
	return SetName(prefix, 1) + " … " + SetName(prefix, n)
}

// GradesOperator: c judges the student's operator or project as it is
// (operator_check, project_test, manifests), not an act in the sandbox.
func (c Cond) GradesOperator() bool {
	return c.Kind == CondOperatorCheck || c.Kind == CondProjectTest || c.Kind == CondManifests
}

// Gated says whether the step's check waits for the student to act: it has
// an action that leaves a trace. A step that only shows something, or whose
// action is a request the apiserver refuses (nothing changes), is checked
// from the moment it is shown.
//
// A step graded by rlab check's checks (operator_check) or by the
// project's own tests (project_test) is not gated either: the student's
// act is saving their operator's file, which the operator picks up by
// re-executing itself, leaving no trace; the checks judge the operator as
// it runs, whenever that was.
func (s *Step) Gated() bool {
	if s.Action == nil || len(s.Action.Play) == 0 {
		return false
	}
	if s.Check != nil {
		for _, c := range s.Check.Conds {
			if c.GradesOperator() {
				return false
			}
		}
	}
	for _, op := range s.Action.Play {
		if op.Args.Str("expect_error") == "" && !traceless[op.Name] {
			return true
		}
	}
	return false
}

// traceless are the actions a student does by hand that neither the trace
// nor the world shows: a Role edited with kubectl (the world does not
// watch Roles), an annotation (the world sees an Echo edited when its
// generation changes, and metadata does not change it). A step whose
// action is only these is checked from the moment it is shown; what it
// checks cannot hold before the act anyway.
//
// A request the world cannot see is still seen by the student's proxy when
// it goes through `rlab env`'s kubeconfig (check you_asked), but not when a
// student uses a kubeconfig of their own: the stale update of lesson 7 and
// the review of a ServiceAccount's rights in lesson 10 and the read of
// managedFields in lesson 14 are not gated either, nor lesson 16's
// discovery, reads and admission policy (the world watches no policies).
// A status written by hand keeps the generation, but the world sees it by
// its field manager (kubectl's, on the status subresource).
var traceless = map[string]bool{"role_verbs": true, "role_reset": true, "annotate": true,
	"stale_update": true, "rules_review": true, "get_deployment": true,
	"api_resources": true, "explain": true, "get_echo": true, "apply_policy": true, "delete_policy": true}

// ActionNames are the actions a lesson can play, sorted.
func ActionNames() []string { return sortedKeys(actions) }

// ActionTakesStyle says whether action name takes a style argument: it is
// then performed for each style the argument names.
func ActionTakesStyle(name string) bool {
	_, ok := actions[name].args.required["style"]
	return ok
}
