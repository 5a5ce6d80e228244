package check

import (
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kkloud/rlab/sim/rbac"
)

// scaffoldGrant is what a kubebuilder project's config/rbac grants its
// manager: manager-role (from the markers) cluster-wide, and the leader
// election Role.
func scaffoldGrant() *rbac.Grant {
	all := []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	return &rbac.Grant{
		Path: "config/rbac",
		Cluster: []rbac.Role{{Kind: rbac.KindClusterRole, Name: "manager-role", Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: all},
			{APIGroups: []string{"kkloud.io"}, Resources: []string{"echoes"}, Verbs: all},
			{APIGroups: []string{"kkloud.io"}, Resources: []string{"echoes/finalizers"}, Verbs: []string{"update"}},
			{APIGroups: []string{"kkloud.io"}, Resources: []string{"echoes/status"}, Verbs: []string{"get", "patch", "update"}},
		}}},
		Namespaced: []rbac.Role{{Kind: rbac.KindRole, Name: "leader-election-role", Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		}}},
	}
}

// TestPrivilege grades made-up request records as the proxies publish
// them: under the course's Role, and granted the operator's own RBAC,
// where it compares what was declared, used, and needed.
func TestPrivilege(t *testing.T) {
	const ns = "echo-mine"
	at := time.Unix(0, 0)
	q := func(verb, resource, namespace string, code int) Request {
		return Request{Time: at, Replica: "a", Verb: verb, Resource: resource, Namespace: namespace, Code: code}
	}
	// A stock controller-runtime manager: it caches every namespace.
	manager := []Request{
		q("get", "discovery", "", 200),
		q("list", "echoes", "", 200), q("watch", "echoes", "", 200),
		q("list", "deployments", "", 200), q("watch", "deployments", "", 200),
		q("create", "deployments", ns, 201), q("update", "echoes/status", ns, 200),
		q("create", "events", ns, 201),
	}
	tests := []struct {
		name   string
		grant  *rbac.Grant
		qs     []Request
		pass   bool
		reason string
	}{
		{name: "course's Role, in its namespace", qs: []Request{
			q("list", "echoes", ns, 200), q("watch", "echoes", ns, 200), q("create", "deployments", ns, 201),
		}, pass: true, reason: "3 requests, none denied"},
		{name: "no request at all", reason: "no request to judge: the operator made none through rlab (does it read $KUBECONFIG?)"},
		{name: "course's Role, pods", qs: []Request{q("list", "pods", ns, 403), q("list", "pods", ns, 403)},
			reason: "denied: list pods ×2: the course's Role allows Echoes, their status, Deployments, reading ConfigMaps and writing echo-registry, Events and Leases in its namespace; " +
				"get what you need from those (e.g. the Deployment's status, not its pods)"},
		{name: "course's Role, across all namespaces", qs: []Request{
			q("list", "echoes", "", 403), q("list", "echoes", "", 403), q("list", "echoes", "", 403), q("list", "deployments", "", 403),
		}, reason: "denied: list echoes (all namespaces) ×3, list deployments (all namespaces) ×1: the course's Role allows Echoes, their status, " +
			"Deployments, reading ConfigMaps and writing echo-registry, Events and Leases in its namespace only: list and watch in $WATCH_NAMESPACE, or grade the operator with its own RBAC (--rbac)"},
		{name: "course's Role, kubectl's namespace lookup", qs: []Request{
			q("get", "echoes", ns, 404), {Time: at, Replica: "a", Verb: "get", Resource: "namespaces", Object: "Namespace/" + ns, Code: 403},
		}, pass: true, reason: "1 requests, none denied (not counted: kubectl's lookup of namespace echo-mine after a 404 ×1)"},
		{name: "own RBAC, the scaffold's manager", grant: scaffoldGrant(), qs: manager, pass: true,
			reason: "8 requests, none denied, none beyond what the course needs; " +
				"declared, never used: delete deployments, get deployments, patch deployments, update deployments, " +
				"create echoes, delete echoes, get echoes, patch echoes, update echoes, get echoes/status, patch echoes/status, " +
				"get leases, list leases, watch leases, create leases, update leases, patch leases, delete leases, patch events; " +
				"used across all namespaces: list deployments, watch deployments, list echoes, watch echoes"},
		{name: "own RBAC, beyond the course", grant: &rbac.Grant{Path: "role.yaml", Cluster: []rbac.Role{{Kind: rbac.KindClusterRole, Name: "r", Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"kkloud.io"}, Resources: []string{"*"}, Verbs: []string{"*"}},
		}}}}, qs: []Request{q("list", "pods", "", 200), q("list", "pods", "", 200), q("list", "echoes", ns, 200)},
			reason: "beyond what the course needs (Echoes, their status, Deployments, reading ConfigMaps and writing echo-registry, Events and Leases): list pods ×2; " +
				"declared, never used: watch pods; used across all namespaces: list pods"},
		{name: "own RBAC, a Role asked across all namespaces", grant: &rbac.Grant{Path: "roles.yaml", Namespaced: []rbac.Role{{Kind: rbac.KindRole, Name: "r", Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"kkloud.io"}, Resources: []string{"echoes"}, Verbs: []string{"list"}},
		}}}}, qs: []Request{q("list", "echoes", "", 403), q("get", "secrets", ns, 403)},
			reason: "denied (not granted by roles.yaml): get secrets ×1, list echoes (all namespaces) ×1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := logOf(t, tt.qs)
			r := &run{st: "mine", ns: ns, rec: rec, opts: Options{RBAC: tt.grant, Within: 5 * time.Second}, scopes: knownScopes()}
			pass, reason, err := r.privilege(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if pass != tt.pass || reason != tt.reason {
				t.Fatalf("privilege() = %v, %q\nwant          %v, %q", pass, reason, tt.pass, tt.reason)
			}
		})
	}
}

// TestGrants: a rule's verb and resource, wildcards included, cover a
// request by name; discovery needs no rule.
func TestGrants(t *testing.T) {
	tests := []struct {
		verb, resource string
		q              Request
		want           bool
	}{
		{"list", "echoes", Request{Verb: "list", Resource: "echoes"}, true},
		{"list", "echoes", Request{Verb: "watch", Resource: "echoes"}, false},
		{"update", "echoes", Request{Verb: "update", Resource: "echoes/status"}, false},
		{"*", "echoes", Request{Verb: "delete", Resource: "echoes"}, true},
		{"get", "*", Request{Verb: "get", Resource: "pods"}, true},
		{"get", "echoes/*", Request{Verb: "get", Resource: "echoes/status"}, true},
		{"get", "echoes/*", Request{Verb: "get", Resource: "echoes"}, false},
		{"get", "*", Request{Verb: "get", Resource: "discovery"}, false},
		{"get", "*", Request{Verb: "get", Resource: "/healthz"}, false},
	}
	for _, tt := range tests {
		if got := grants(tt.verb, tt.resource, tt.q); got != tt.want {
			t.Errorf("grants(%s %s, %s) = %v, want %v", tt.verb, tt.resource, tt.q.Key(), got, tt.want)
		}
	}
}
