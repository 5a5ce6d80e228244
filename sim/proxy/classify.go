package proxy

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// requestInfo is the apiserver's own parser, so the proxy names requests the
// way audit logs and RBAC do. Its fields are read-only after construction, so
// one value is safe to share.
var requestInfo = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// call is what one request is, as counted and traced.
type call struct {
	verb      string // get, list, watch, create, ...; lower-case method for non-resource paths
	resource  string // "echoes", "echoes/status", "discovery", or the path
	namespace string
	object    string // "Echo/hello", or ""
}

// key is the Counts key: "verb resource".
func (c call) key() string { return c.verb + " " + c.resource }

// classify names a request by verb and resource.
func classify(r *http.Request) call {
	// NewRequestInfo returns its best guess together with any error, and a
	// miscount is better than no count.
	info, _ := requestInfo.NewRequestInfo(r)
	if info == nil || !info.IsResourceRequest {
		return call{verb: strings.ToLower(r.Method), resource: nonResource(r.URL.Path)}
	}
	c := call{verb: info.Verb, resource: info.Resource, namespace: info.Namespace}
	if c.verb == "" {
		c.verb = strings.ToLower(r.Method)
	}
	if info.Subresource != "" {
		c.resource += "/" + info.Subresource
	}
	if info.Name != "" {
		c.object = kindOf(info.Resource) + "/" + info.Name
	}
	return c
}

// nonResource is "discovery" for the paths clients read to learn the API,
// and the path itself for the rest (/healthz, /metrics, ...).
func nonResource(path string) string {
	p := "/" + strings.Trim(path, "/")
	for _, d := range []string{"/api", "/apis", "/version", "/openapi"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return "discovery"
		}
	}
	return p
}

// kinds maps the resources the sandbox works with to their Kind, so proxy
// events name objects the way the rest of the trace does ("Echo/hello").
var kinds = map[string]string{
	"echoes":                    "Echo",
	"configmaps":                "ConfigMap",
	"secrets":                   "Secret",
	"pods":                      "Pod",
	"deployments":               "Deployment",
	"replicasets":               "ReplicaSet",
	"statefulsets":              "StatefulSet",
	"daemonsets":                "DaemonSet",
	"jobs":                      "Job",
	"leases":                    "Lease",
	"events":                    "Event",
	"namespaces":                "Namespace",
	"nodes":                     "Node",
	"services":                  "Service",
	"serviceaccounts":           "ServiceAccount",
	"endpoints":                 "Endpoints",
	"endpointslices":            "EndpointSlice",
	"roles":                     "Role",
	"rolebindings":              "RoleBinding",
	"clusterroles":              "ClusterRole",
	"clusterrolebindings":       "ClusterRoleBinding",
	"customresourcedefinitions": "CustomResourceDefinition",
	"selfsubjectaccessreviews":  "SelfSubjectAccessReview",
}

// kindOf is the Kind of a known resource, else the resource itself: a
// guessed singular would be wrong often enough to mislead.
func kindOf(resource string) string {
	if k, ok := kinds[resource]; ok {
		return k
	}
	return resource
}

// KindOf is the Kind the trace names an object of resource by ("echoes":
// "Echo"), for whoever reads requests from elsewhere (an audit log).
func KindOf(resource string) string { return kindOf(resource) }

// NonResource is how the trace names a request for a path that is no
// resource ("discovery", "/healthz").
func NonResource(path string) string { return nonResource(path) }
