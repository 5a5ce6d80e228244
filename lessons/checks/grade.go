package checks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kkloud/rlab/sim/feature/check"
)

// Grade is where the runs of rlab check's checks on the student's operator
// stand, for one operator_check: they run in the background while the
// check is awaited, again and again until one run passes, since the
// student fixes the operator meanwhile.
type Grade struct {
	Runs    int            // runs finished
	Last    []check.Result // of the last finished run
	Partial []check.Result // of the run under way, so far
	Running bool
	Took    time.Duration // of the last finished run
	// Err says why the checks could not run at all (no such operator).
	Err string
	// Log is the operator's log file, where the student looks next.
	Log string
}

// GradeWithin bounds each wait of a check for the operator to act: a
// lesson's operator polls every few seconds, and a failing check should say
// so soon.
const GradeWithin = 20 * time.Second

// RegradeAfter is the pause between a failed run and the next.
const RegradeAfter = 2 * time.Second

// ManifestsKey names the readings of one manifests condition.
func ManifestsKey(a Args) string { return "manifests:" + a.Str("operator") }

// GradeKey names the runs of one operator_check condition.
func GradeKey(a Args) string {
	return a.Str("operator") + ":" + strings.Join(a.List("checks"), ",")
}

// The runs of a project_test besides the one of its tests: each must fail
// one of them.
const (
	WithoutGC = "without the garbage collector"
	OnBroken  = "on the lesson's broken version"
)

// ProjectTestKey names the runs of one project_test condition.
func ProjectTestKey(a Args) string {
	return "go test:" + a.Str("operator") + ":" + strings.Join(ProjectTestIDs(a), ",")
}

// ProjectTestIDs are the results a project_test needs, all passed: one per
// test, then WithoutGC (needs_gc) and OnBroken (fails_with).
func ProjectTestIDs(a Args) []string {
	ids := slices.Clone(a.List("tests"))
	if a.Bool("needs_gc") {
		ids = append(ids, WithoutGC)
	}
	if a.File("fails_with").Name != "" {
		ids = append(ids, OnBroken)
	}
	return ids
}

// Passed says whether the last finished run passed every check of ids.
func (g Grade) Passed(ids []string) bool {
	if g.Runs == 0 {
		return false
	}
	for _, id := range ids {
		i := slices.IndexFunc(g.Last, func(r check.Result) bool { return r.ID == id })
		if i < 0 || !g.Last[i].Pass {
			return false
		}
	}
	return true
}

// result is an operator_check's outcome: passed when a whole run passed;
// else the failing checks, each with rlab check's one-line reason (the
// newest: of the run under way if it has got that far), one a line.
func (g Grade) result(ids []string) styleResult {
	if g.Err != "" {
		return styleResult{detail: g.Err}
	}
	if g.Passed(ids) {
		if len(g.Last) > 3 {
			return styleResult{ok: true, detail: fmt.Sprintf("all %d checks passed in %s", len(g.Last), Secs(g.Took))}
		}
		var parts []string
		for _, r := range g.Last {
			parts = append(parts, r.ID+" ✓ "+r.Reason)
		}
		return styleResult{ok: true, detail: strings.Join(parts, "; ")}
	}
	latest := map[string]check.Result{}
	for _, r := range g.Last {
		latest[r.ID] = r
	}
	for _, r := range g.Partial {
		latest[r.ID] = r
	}
	var failing []string
	done := 0
	for _, id := range ids {
		r, ok := latest[id]
		switch {
		case !ok:
		case r.Pass:
			done++
		default:
			done++
			failing = append(failing, "✗ "+id+": "+r.Reason)
		}
	}
	if len(failing) > 0 && g.Log != "" {
		failing = append(failing, "its log: "+g.Log)
	}
	switch {
	case len(failing) > 0 && g.Running:
		failing = append(failing, "(checking again…)")
	case len(failing) > 0:
	case g.Runs == 0:
		return styleResult{detail: fmt.Sprintf("checking: %d of %d done", len(g.Partial), len(ids))}
	default: // a check that did not run at all
		return styleResult{detail: fmt.Sprintf("%d of %d checks ran; checking again", done, len(ids))}
	}
	return styleResult{detail: strings.Join(failing, "\n")}
}
