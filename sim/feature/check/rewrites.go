package check

// Rewrites: writes the apiserver answered without changing anything. The
// proxy marks them (sim/proxy, unchanged.go): an update answered with the
// resourceVersion it sent, a patch answered with the one the object had.
// One now and then is harmless; the same object written for nothing again
// and again is an operator that rewrites on every pass, most often because
// it builds the whole spec and compares it with the server's, which the
// apiserver has filled with defaults, so the two always differ.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A rewrite on every pass: an object got at least rewriteMin writes that
// changed nothing, and they were at least half of its writes. Fewer are
// what a lagging cache causes now and then (a reconcile that reads its own
// last status write before the watch brings it, and writes it again).
const rewriteMin = 3

// maxRewriteParts bounds the objects the finding names.
const maxRewriteParts = 3

// rewrites judges the writes made since t.
func (r *run) rewrites(_ context.Context, since time.Time) (bool, string, error) {
	if r.opts.InCluster {
		return false, "not checked in the cluster: the apiserver's audit log says which writes were made, not whether one changed anything (rlab's proxy does)", nil
	}
	return rewriteFinding(r.rec.Requests(since))
}

// rewriteFinding is the Rewrites check over reqs.
func rewriteFinding(reqs []Request) (bool, string, error) {
	type tally struct {
		key      string // "update Deployment/echo-hello", "update Echo/hello status"
		n, of    int    // writes that changed nothing, of the writes answered 2xx
		differed []string
	}
	by := map[string]*tally{}
	writes, unchanged := 0, 0
	for _, q := range reqs {
		if !q.Write() || q.Housekeeping() || q.Code/100 != 2 {
			continue
		}
		writes++
		key := q.Verb + " " + q.Object
		if _, sub, ok := strings.Cut(q.Resource, "/"); ok {
			key += " " + sub
		}
		t := by[key]
		if t == nil {
			t = &tally{key: key}
			by[key] = t
		}
		t.of++
		if !q.Unchanged {
			continue
		}
		unchanged++
		t.n++
		if len(q.Differed) > 0 {
			t.differed = q.Differed
		}
	}
	if unchanged == 0 {
		return true, fmt.Sprintf("each of its %d writes changed something", writes), nil
	}
	all := make([]*tally, 0, len(by))
	for _, t := range by {
		if t.n > 0 {
			all = append(all, t)
		}
	}
	slices.SortFunc(all, func(a, b *tally) int { return cmp.Or(b.n-a.n, strings.Compare(a.key, b.key)) })
	var parts []string
	every := false
	var named []string // the fields named last
	for i, t := range all {
		every = every || (t.n >= rewriteMin && 2*t.n >= t.of)
		if i == maxRewriteParts {
			parts = append(parts, fmt.Sprintf("and %d more objects", len(all)-i))
			break
		}
		part := fmt.Sprintf("%s %d× of %d", t.key, t.n, t.of)
		switch {
		case len(t.differed) > 0 && slices.Equal(t.differed, named):
			part += " (the same fields)"
		case len(t.differed) > 0:
			part += " (what it sent differed from the stored object in " + fieldList(t.differed) + ")"
			named = t.differed
		case strings.HasSuffix(t.key, " status"):
			part += " (the status it already had)"
		default:
			part += " (what was already there)"
		}
		parts = append(parts, part)
	}
	reason := fmt.Sprintf("%d of its %d writes changed nothing: %s", unchanged, writes, strings.Join(parts, "; "))
	if !every {
		return true, reason, nil
	}
	return false, reason + ": it rewrites on every pass. Compare what you want with what is there before you write, " +
		"and set only the fields you own (in CreateOrUpdate's mutate function, not a whole new spec, which lacks the defaults)", nil
}

// fieldList is "a, b and 3 more" of fields as the proxy names them.
func fieldList(fs []string) string {
	if len(fs) == 1 {
		return fs[0]
	}
	return strings.Join(fs[:len(fs)-1], ", ") + " and " + fs[len(fs)-1]
}
