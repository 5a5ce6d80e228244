package check

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
)

// scopes says which resources are namespaced. The proxy knows only a
// request's URL, where a list across all namespaces and a request about a
// cluster-scoped object look alike (no namespace in either); the cluster's
// discovery tells them apart, asked once per run.
type scopes struct {
	// load returns namespaced-ness by resource name ("echoes": true,
	// "namespaces": false); resources it does not name are unknown.
	load func() (map[string]bool, error)
}

// newScopes asks kube's discovery, the first time it is needed.
func newScopes(kube kubernetes.Interface) *scopes {
	return &scopes{load: sync.OnceValues(func() (map[string]bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return discoverScopes(ctx, kube.Discovery())
	})}
}

// discoverScopes reads which resources the server says are namespaced. A
// group that failed (an aggregated API that is down) leaves its resources
// unknown; the rest still count.
func discoverScopes(ctx context.Context, d discovery.DiscoveryInterfaceWithContext) (map[string]bool, error) {
	lists, err := d.ServerPreferredResourcesWithContext(ctx)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discover which resources are namespaced: %w", err)
	}
	m := map[string]bool{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			// One name in two groups (events): namespaced if either is.
			m[r.Name] = m[r.Name] || r.Namespaced
		}
	}
	return m, nil
}

// scope is the run's, made on first use.
func (r *run) scope() *scopes {
	if r.scopes == nil {
		r.scopes = newScopes(r.kube)
	}
	return r.scopes
}

// acrossNamespaces says whether q asked about a namespaced resource across
// all namespaces (a cluster-wide list or watch). Where discovery failed it
// says no: the key is then plain, not wrong.
func (r *run) acrossNamespaces(q Request) bool {
	if q.Namespace != "" || q.Resource == "discovery" || strings.HasPrefix(q.Resource, "/") {
		return false
	}
	m, err := r.scope().load()
	if err != nil {
		return false
	}
	res, _, _ := strings.Cut(q.Resource, "/") // echoes/status is as echoes
	return m[res]
}

// scopedKey names q where its scope matters: "list echoes (all
// namespaces)" for a request across all namespaces, else "verb resource".
// Every reason that lists requests by scope names them here.
func (r *run) scopedKey(q Request) string {
	if r.acrossNamespaces(q) {
		return q.Key() + " (all namespaces)"
	}
	return q.Key()
}
