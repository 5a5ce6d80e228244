package sandbox

import (
	"slices"
	"sync"

	"k8s.io/client-go/dynamic"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
)

// scope is what every part of the engine reads and none changes once Start
// has made it: the styles running and the prefix of their namespaces. Each
// part holds a copy.
type scope struct {
	prefix style.Prefix
	// styles are the built-in styles, then the custom operators' names.
	styles []style.Style
}

// namespace is the namespace of style st: its prefix, then "echo-<style>".
func (sc scope) namespace(st style.Style) string { return sc.prefix.Namespace(st) }

// runs says whether style st runs.
func (sc scope) runs(st style.Style) bool { return slices.Contains(sc.styles, st) }

// running are those of styles that run, in their order; nil is every style.
func (sc scope) running(styles []style.Style) []style.Style {
	if styles == nil {
		return sc.styles
	}
	var out []style.Style
	for _, st := range sc.styles {
		if slices.Contains(styles, st) {
			out = append(out, st)
		}
	}
	return out
}

// everyStyle runs fn for each running style at the same instant, so the
// styles race fairly, and returns the first error (the apiserver's own).
func (sc scope) everyStyle(fn func(st style.Style) error) error { return inStyles(sc.styles, fn) }

// forStyles runs fn for one style, or for every style when only is "".
func (sc scope) forStyles(only style.Style, fn func(st style.Style) error) error {
	if only == "" {
		return sc.everyStyle(fn)
	}
	return fn(only)
}

// echoes is c's client of a style's Echoes.
func (sc scope) echoes(c *clients, st style.Style) dynamic.ResourceInterface {
	return c.dyn.Resource(echov1.Resource).Namespace(sc.namespace(st))
}

// inStyles runs fn for each of styles at the same instant, as everyStyle.
func inStyles(styles []style.Style, fn func(st style.Style) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	start := make(chan struct{})
	for _, st := range styles {
		wg.Go(func() {
			<-start
			if err := fn(st); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		return errs[0] // the same rejection in every namespace: say it once
	}
	return nil
}

// replicaPlan is what says how many replicas each style runs: the custom
// operators (whose Command Start fills in before any replica starts) and
// Options.Replicas. The operator parts each hold a copy.
type replicaPlan struct {
	custom []Custom
	counts map[style.Style]int
	// live holds a custom operator's replica count once Customs.SetReplicas
	// changed it: shared by every copy, so all see the change at once.
	live *liveReplicas
}

// liveReplicas are the custom operators' replica counts changed while the
// sandbox runs.
type liveReplicas struct {
	mu sync.Mutex
	n  map[style.Style]int
}

// get is st's count, or 0 if it was never changed.
func (l *liveReplicas) get(st style.Style) int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[st]
}

func (l *liveReplicas) set(st style.Style, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[style.Style]int{}
	}
	l.n[st] = n
}

// of are the replicas style st runs.
func (p replicaPlan) of(st style.Style) []string {
	if c := p.customOf(st); c != nil {
		if n := p.live.get(st); n > 0 {
			return replicaNames(n)
		}
		return replicaNames(c.Replicas)
	}
	if n := p.counts[st]; n > 0 {
		return replicaNames(n)
	}
	return Replicas(st)
}

// customOf is the custom operator named st, or nil.
func (p replicaPlan) customOf(st style.Style) *Custom {
	for i := range p.custom {
		if p.custom[i].Name == st {
			return &p.custom[i]
		}
	}
	return nil
}
