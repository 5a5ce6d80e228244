package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/checks"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/feature/check"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/ship"
)

// grader runs the operator_checks, project_tests and manifests of one
// awaited check in the background.
type grader struct {
	mu     sync.Mutex
	grades map[string]*checks.Grade
	wg     sync.WaitGroup
}

// grade starts, for each operator_check of c, runs of its checks until one
// passes or ctx ends; wait for them after ending ctx.
func (p *Player) grade(ctx context.Context, c *lessons.Check) *grader {
	g := &grader{grades: map[string]*checks.Grade{}}
	for _, cond := range c.Conds {
		if cond.Kind == lessons.CondProjectTest {
			key := checks.ProjectTestKey(cond.Args)
			if g.grades[key] == nil {
				g.grades[key] = &checks.Grade{}
				g.wg.Go(func() { p.testLoop(ctx, g, key, cond.Args) })
			}
			continue
		}
		if cond.Kind == lessons.CondManifests {
			key := checks.ManifestsKey(cond.Args)
			if g.grades[key] == nil {
				g.grades[key] = &checks.Grade{}
				g.wg.Go(func() { p.manifestsLoop(ctx, g, key, style.Style(cond.Args.Str("operator"))) })
			}
			continue
		}
		if cond.Kind != lessons.CondOperatorCheck {
			continue
		}
		key := checks.GradeKey(cond.Args)
		if g.grades[key] != nil {
			continue
		}
		g.grades[key] = &checks.Grade{}
		st, ids := style.Style(cond.Args.Str("operator")), cond.Args.List("checks")
		g.wg.Go(func() { p.gradeLoop(ctx, g, key, st, ids) })
	}
	return g
}

// snapshot is a copy of every grade, for a View.
func (g *grader) snapshot() map[string]checks.Grade {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]checks.Grade, len(g.grades))
	for k, gr := range g.grades {
		c := *gr
		c.Last, c.Partial = slices.Clone(gr.Last), slices.Clone(gr.Partial)
		out[k] = c
	}
	return out
}

func (g *grader) update(key string, fn func(*checks.Grade)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fn(g.grades[key])
}

// gradeLoop runs the checks ids on st until a run passes them all or ctx
// ends. After each run the sample Echo gets its spec back: the checks scale
// it, and the lesson must leave it as it found it.
func (p *Player) gradeLoop(ctx context.Context, g *grader, key string, st style.Style, ids []string) {
	if !slices.Contains(p.sb.Styles(), st) {
		g.update(key, func(gr *checks.Grade) {
			gr.Err = fmt.Sprintf("this sandbox runs no operator %s: start the lesson with rlab lesson start, which runs it", st)
		})
		return
	}
	g.update(key, func(gr *checks.Grade) { gr.Log = p.sb.Operators().LogFile(st, p.sb.Operators().Replicas(st)[0]) })
	if sh, ok := p.sb.Shipped(st); ok {
		g.update(key, func(gr *checks.Grade) { gr.Log = sh.Pods.LogFile(sh.Pods.Replicas()[0]) })
	}
	for {
		g.update(key, func(gr *checks.Grade) { gr.Running, gr.Partial = true, nil })
		t0 := time.Now()
		res, err := p.gradeOnce(ctx, st, ids, func(r check.Result) {
			g.update(key, func(gr *checks.Grade) { gr.Partial = append(gr.Partial, r) })
		})
		if ctx.Err() != nil {
			return // the step is over: nobody reads this run
		}
		g.update(key, func(gr *checks.Grade) {
			gr.Runs++
			gr.Last, gr.Partial, gr.Running, gr.Took, gr.Err = res, nil, false, time.Since(t0), ""
			if err != nil {
				gr.Err = "the checks could not run: " + err.Error()
			}
		})
		if err == nil && (checks.Grade{Runs: 1, Last: res}).Passed(ids) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(checks.RegradeAfter):
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
	target, opts := check.Sandbox(p.sb), check.Options{Operator: st, Only: ids, Within: checks.GradeWithin, Progress: progress}
	if sh, ok := p.sb.Shipped(st); ok {
		// In the cluster: its pods are its replicas, the audit log says
		// what they asked.
		rec = check.NewRequestLogOf(p.sb.Bus(), st, ship.SourcePrefix)
		target, opts.InCluster, opts.RBAC = check.InCluster(p.sb, sh.Pods), true, sh.RBAC
	}
	defer rec.Close()
	res, err := check.Run(ctx, target, rec, opts)
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

// manifestsLoop reads the manifests of st's project every second until
// they are what its markers say or ctx ends.
func (p *Player) manifestsLoop(ctx context.Context, g *grader, key string, st style.Style) {
	for {
		res := check.Result{ID: lessons.CondManifests, Required: true}
		dir, err := p.sb.Customs().ProjectDir(st)
		if err == nil {
			err = ship.CheckManifests(dir)
		}
		if err == nil {
			res.Pass, res.Reason = true, "config/rbac is what the markers say; the Echo CRD is in config/crd/bases"
		} else {
			res.Reason = err.Error()
		}
		g.update(key, func(gr *checks.Grade) { gr.Runs++; gr.Last = []check.Result{res} })
		if res.Pass {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
