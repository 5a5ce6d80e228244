package rbac

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// markerPrefix starts a kubebuilder RBAC marker, from which controller-gen
// writes a project's config/rbac/role.yaml.
const markerPrefix = "// +kubebuilder:rbac:"

// Markers reads the +kubebuilder:rbac markers in Go source src, a rule each,
// as controller-gen reads them: keys groups, resources, resourceNames and
// verbs, values split on ";", `""` the core group.
func Markers(src []byte) ([]rbacv1.PolicyRule, error) {
	var out []rbacv1.PolicyRule
	for line := range strings.SplitSeq(string(src), "\n") {
		marker, ok := strings.CutPrefix(strings.TrimSpace(line), markerPrefix)
		if !ok {
			continue
		}
		var r rbacv1.PolicyRule
		for kv := range strings.SplitSeq(marker, ",") {
			k, v, _ := strings.Cut(kv, "=")
			vals := strings.Split(strings.ReplaceAll(v, `""`, ""), ";")
			switch k {
			case "groups":
				r.APIGroups = vals
			case "resources":
				r.Resources = vals
			case "resourceNames":
				r.ResourceNames = vals
			case "verbs":
				r.Verbs = vals
			default:
				return nil, fmt.Errorf("marker %q: unknown key %q", marker, k)
			}
		}
		out = append(out, r)
	}
	return out, nil
}
