package check

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/sim/sandbox"
)

// courseResources says in a few words what the course's Role allows.
const courseResources = "Echoes, their status, Deployments, reading ConfigMaps and writing " + echo.RegistryName + ", Events and Leases"

// judgePrivilege grades the operator's requests qs (probes: kubectl's
// lookups of its namespace, not counted). Under the course's Role (or one
// wider) it fails on any denial or any request beyond the course's Role.
// Granted its own RBAC (Options.RBAC) it compares what it declared, what it
// used and what the course needs: it fails on a denial or on a request
// beyond what the course needs, by verb and resource; and it lists, to trim
// the student's markers by, what was declared and never used and what was
// used across all namespaces.
func (r *run) judgePrivilege(qs []Request, probes int) (bool, string) {
	note := ""
	if probes > 0 {
		note = fmt.Sprintf(" (not counted: kubectl's lookup of namespace %s after a 404 ×%d)", r.ns, probes)
	}
	if len(qs) == 0 {
		// Nothing asked, nothing to judge: not a pass.
		if r.named != "" {
			return false, "no request to judge: see " + r.named
		}
		return false, "no request to judge: the operator made none through rlab (does it read $" + sandbox.EnvKubeconfig + "?)" + note
	}
	if r.opts.RBAC != nil {
		return r.judgeOwnRBAC(qs, note)
	}
	if d := r.denied(qs); len(d) > 0 {
		advice := "the course's Role allows " + courseResources + " in its namespace; get what you need from those (e.g. the Deployment's status, not its pods)"
		if slices.ContainsFunc(qs, func(q Request) bool { return q.Code == 403 && r.acrossNamespaces(q) }) {
			advice = "the course's Role allows " + courseResources + " in its namespace only: list and watch in $" +
				sandbox.EnvWatchNamespace + ", or grade the operator with its own RBAC (--rbac)"
		}
		return false, "denied: " + strings.Join(d, ", ") + note + ": " + advice
	}
	n := map[string]int{}
	for _, q := range qs {
		if beyondCourse(q) {
			n[q.Key()]++
		}
	}
	if b := counted(n); len(b) > 0 {
		return false, "beyond the course's Role: " + strings.Join(b, ", ") + note
	}
	return true, fmt.Sprintf("%d requests, none denied%s", len(qs), note)
}

// judgeOwnRBAC is judgePrivilege for an operator granted its own RBAC.
func (r *run) judgeOwnRBAC(qs []Request, note string) (bool, string) {
	d := r.denied(qs)
	beyond := map[string]int{}
	for _, q := range qs {
		if q.Code != 403 && beyondCourse(q) {
			beyond[q.Key()]++
		}
	}
	b := counted(beyond)
	var parts []string
	pass := len(d) == 0 && len(b) == 0
	if pass {
		parts = append(parts, fmt.Sprintf("%d requests, none denied, none beyond what the course needs", len(qs)))
	}
	if len(d) > 0 {
		parts = append(parts, "denied (not granted by "+r.opts.RBAC.Path+"): "+strings.Join(d, ", "))
	}
	if len(b) > 0 {
		parts = append(parts, "beyond what the course needs ("+courseResources+"): "+strings.Join(b, ", "))
	}
	if u := unused(r.opts.RBAC.Rules(), qs); len(u) > 0 {
		parts = append(parts, "declared, never used: "+strings.Join(u, ", "))
	}
	if a := r.usedAcross(qs); len(a) > 0 {
		parts = append(parts, "used across all namespaces: "+strings.Join(a, ", "))
	}
	return pass, strings.Join(parts, "; ") + note
}

// usedAcross lists, sorted, the distinct requests made (and not denied)
// across all namespaces, as "verb resource".
func (r *run) usedAcross(qs []Request) []string {
	var out []string
	for _, q := range qs {
		if q.Code != 403 && r.acrossNamespaces(q) && !slices.Contains(out, q.Key()) {
			out = append(out, q.Key())
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		av, ares, _ := strings.Cut(a, " ")
		bv, bres, _ := strings.Cut(b, " ")
		if c := strings.Compare(ares, bres); c != 0 {
			return c
		}
		return strings.Compare(av, bv)
	})
	return out
}

// unused lists, in the order declared, every "verb resource" that rules
// grant and no request of qs used. A finalizers subresource is left out:
// the apiserver checks it (to set blockOwnerDeletion in an ownerReference)
// where that admission runs, but it is never a request of its own.
func unused(rules []rbacv1.PolicyRule, qs []Request) []string {
	var out []string
	for _, rule := range rules {
		for _, res := range rule.Resources {
			if strings.HasSuffix(res, "/finalizers") {
				continue
			}
			for _, verb := range rule.Verbs {
				k := verb + " " + res
				if slices.Contains(out, k) || slices.ContainsFunc(qs, func(q Request) bool { return grants(verb, res, q) }) {
					continue
				}
				out = append(out, k)
			}
		}
	}
	return out
}

// grants says whether verb on resource (from a rule, wildcards allowed)
// covers request q. The request names no API group, so neither does this.
func grants(verb, resource string, q Request) bool {
	if q.Resource == "discovery" || strings.HasPrefix(q.Resource, "/") {
		return false // open to every user: no rule is needed
	}
	if verb != rbacv1.VerbAll && verb != q.Verb {
		return false
	}
	if resource == rbacv1.ResourceAll || resource == q.Resource {
		return true
	}
	parent, sub, _ := strings.Cut(resource, "/")
	qparent, qsub, _ := strings.Cut(q.Resource, "/")
	return sub == rbacv1.ResourceAll && parent == qparent && qsub != "" // "echoes/*"
}
