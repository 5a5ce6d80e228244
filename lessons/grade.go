package lessons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/feature/check"
	"github.com/kkloud/rlab/sim/sandbox"
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

// gradeWithin bounds each wait of a check for the operator to act: a
// lesson's operator polls every few seconds, and a failing check should say
// so soon.
const gradeWithin = 20 * time.Second

// regradeAfter is the pause between a failed run and the next.
const regradeAfter = 2 * time.Second

// gradeKey names the runs of one operator_check condition.
func gradeKey(a Args) string {
	return a.Str("operator") + ":" + strings.Join(a.List("checks"), ",")
}

// passed says whether the last finished run passed every check of ids.
func (g Grade) passed(ids []string) bool {
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
	if g.passed(ids) {
		if len(g.Last) > 3 {
			return styleResult{ok: true, detail: fmt.Sprintf("all %d checks passed in %s", len(g.Last), secs(g.Took))}
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

// grader runs the operator_checks of one awaited check in the background.
type grader struct {
	mu     sync.Mutex
	grades map[string]*Grade
	wg     sync.WaitGroup
}

// grade starts, for each operator_check of c, runs of its checks until one
// passes or ctx ends; wait for them after ending ctx.
func (p *Player) grade(ctx context.Context, c *Check) *grader {
	g := &grader{grades: map[string]*Grade{}}
	for _, cond := range c.Conds {
		if cond.Kind != condOperatorCheck {
			continue
		}
		key := gradeKey(cond.Args)
		if g.grades[key] != nil {
			continue
		}
		g.grades[key] = &Grade{}
		st, ids := style.Style(cond.Args.Str("operator")), cond.Args.List("checks")
		g.wg.Go(func() { p.gradeLoop(ctx, g, key, st, ids) })
	}
	return g
}

// snapshot is a copy of every grade, for a View.
func (g *grader) snapshot() map[string]Grade {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]Grade, len(g.grades))
	for k, gr := range g.grades {
		c := *gr
		c.Last, c.Partial = slices.Clone(gr.Last), slices.Clone(gr.Partial)
		out[k] = c
	}
	return out
}

func (g *grader) update(key string, fn func(*Grade)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fn(g.grades[key])
}

// gradeLoop runs the checks ids on st until a run passes them all or ctx
// ends. After each run the sample Echo gets its spec back: the checks scale
// it, and the lesson must leave it as it found it.
func (p *Player) gradeLoop(ctx context.Context, g *grader, key string, st style.Style, ids []string) {
	if !slices.Contains(p.sb.Styles(), st) {
		g.update(key, func(gr *Grade) {
			gr.Err = fmt.Sprintf("this sandbox runs no operator %s: start the lesson with rlab lesson start, which runs it", st)
		})
		return
	}
	g.update(key, func(gr *Grade) { gr.Log = p.sb.Operators().LogFile(st, p.sb.Operators().Replicas(st)[0]) })
	for {
		g.update(key, func(gr *Grade) { gr.Running, gr.Partial = true, nil })
		t0 := time.Now()
		res, err := p.gradeOnce(ctx, st, ids, func(r check.Result) {
			g.update(key, func(gr *Grade) { gr.Partial = append(gr.Partial, r) })
		})
		if ctx.Err() != nil {
			return // the step is over: nobody reads this run
		}
		g.update(key, func(gr *Grade) {
			gr.Runs++
			gr.Last, gr.Partial, gr.Running, gr.Took, gr.Err = res, nil, false, time.Since(t0), ""
			if err != nil {
				gr.Err = "the checks could not run: " + err.Error()
			}
		})
		if err == nil && (Grade{Runs: 1, Last: res}).passed(ids) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(regradeAfter):
		}
	}
}

// gradeOnce runs the checks ids on st once, then gives the sample its spec
// back. One run at a time: the run of a step the student has just left may
// still be cleaning up when the next step's begins, and two would undo
// each other's edits.
func (p *Player) gradeOnce(ctx context.Context, st style.Style, ids []string, progress func(check.Result)) ([]check.Result, error) {
	select {
	case p.grading <- struct{}{}:
		defer func() { <-p.grading }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rec := check.NewRequestLog(p.sb.Bus(), st)
	defer rec.Close()
	res, err := check.Run(ctx, check.Sandbox(p.sb), rec, check.Options{Operator: st, Only: ids, Within: gradeWithin, Progress: progress})
	return res, errors.Join(err, p.resetSample(st))
}

// resetSample gives the sample Echo in st's namespace its spec back, with
// a context of its own: it runs after the step's has ended too.
func (p *Player) resetSample(st style.Style) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"message": sandbox.SampleMessage, "replicas": sandbox.SampleReplicas}})
	if err != nil {
		return err
	}
	_, err = p.sb.Admin().Echoes(st).
		Patch(ctx, sandbox.SampleName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "rlab"})
	if err != nil {
		return fmt.Errorf("give Echo %s its spec back: %w", sandbox.SampleName, err)
	}
	return nil
}
