package lessons

import (
	"fmt"
	"strconv"
	"strings"
)

// The engine's words the course names, copied here so that the course
// (the loader, handouts, rlab lesson list and show) links no part of the
// engine. A test in the package that runs each holds it to the engine's:
// lessons/runner's (backends), lessons/checks' (rlab check's checks),
// lessons/actions' (the sandbox's names and flags).

// BackendNames are the sandbox backends a lesson may name (sim/backend's
// Names).
var BackendNames = []string{"envtest", "kind", "kubeconfig"}

// RlabCheck is one of rlab check's checks as a lesson names it (an ID of
// sim/feature/check's All); Replicated ones need two replicas.
type RlabCheck struct {
	ID         string
	Replicated bool
}

// RlabChecks are rlab check's checks, in the order it runs them.
var RlabChecks = []RlabCheck{
	{ID: "deployment"},
	{ID: "owner"},
	{ID: "replicas"},
	{ID: "message"},
	{ID: "status"},
	{ID: "scale"},
	{ID: "conditions"},
	{ID: "drift-scaled"},
	{ID: "drift-deleted"},
	{ID: "quoting"},
	{ID: "invalid"},
	{ID: "gc"},
	{ID: "restart"},
	{ID: "rest"},
	{ID: "rewrites"},
	{ID: "privilege"},
	{ID: "leader", Replicated: true},
	{ID: "failover", Replicated: true},
}

// PolicyName and WebhookName are the admission objects the sandbox applies
// (sim/sandbox's).
const (
	PolicyName  = "echo-max-replicas"
	WebhookName = "echo-unique-message"
)

// SetName is the name of the i-th Echo (from 1) of the set prefix, as the
// sandbox creates them: "load-001" (sim/sandbox's SetName).
func SetName(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }

// TuningWords is a tune action's arguments as the operator's flags, or
// "the library's defaults" (sim/sandbox's Tuning.String).
func TuningWords(a Args) string {
	workers, _ := a.Int("workers")
	burst, _ := a.Int("burst")
	var out []string
	if workers != 0 {
		out = append(out, "--workers="+strconv.Itoa(workers))
	}
	if q := a.QPS("qps"); q != 0 {
		out = append(out, "--qps="+strconv.FormatFloat(float64(q), 'g', -1, 32))
	}
	if burst != 0 {
		out = append(out, "--burst="+strconv.Itoa(burst))
	}
	if len(out) == 0 {
		return "the library's defaults"
	}
	return strings.Join(out, " ")
}
