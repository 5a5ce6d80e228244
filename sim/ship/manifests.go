package ship

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kkloud/rlab/sim/rbac"
)

// ControllerGen is the command that writes a kubebuilder project's
// manifests from its markers, as its `make manifests` does: the RBAC
// (config/rbac/role.yaml, ClusterRole manager-role) and the CRDs
// (config/crd/bases). go run fetches controller-gen from the Go module
// proxy the first time.
const ControllerGen = "go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 rbac:roleName=manager-role crd paths=./... output:crd:artifacts:config=config/crd/bases"

// RBACDir and CRDFile are where ControllerGen writes an Echo project's
// manifests.
const (
	RBACDir = "config/rbac"
	CRDFile = "config/crd/bases/kkloud.io_echoes.yaml"
)

// CheckManifests says whether the project in dir holds manifests made from
// its markers: config/rbac declares exactly what the +kubebuilder:rbac
// markers of its Go files (tests and _ folders left out) ask for, and the
// Echo CRD is in config/crd/bases. Its error says what is missing or
// differs, and the command that writes them.
func CheckManifests(dir string) error {
	want, err := markerRules(dir)
	if err != nil {
		return err
	}
	if len(want) == 0 {
		return fmt.Errorf("no +kubebuilder:rbac marker in the Go files of %s: the role is written from them", dir)
	}
	g, err := rbac.Load(filepath.Join(dir, RBACDir))
	if err != nil {
		return fmt.Errorf("%w; write it from the markers: %s", err, ControllerGen)
	}
	have := grants(g.Rules())
	if missing, extra := diff(grants(want), have); len(missing)+len(extra) > 0 {
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "the markers ask for "+strings.Join(missing, ", ")+", which it lacks")
		}
		if len(extra) > 0 {
			parts = append(parts, "it grants "+strings.Join(extra, ", ")+", which no marker asks for")
		}
		return fmt.Errorf("%s is not what the markers say: %s; write it again: %s", RBACDir, strings.Join(parts, "; "), ControllerGen)
	}
	if _, err := os.Stat(filepath.Join(dir, CRDFile)); err != nil {
		return fmt.Errorf("no %s: %s writes it", CRDFile, ControllerGen)
	}
	return nil
}

// markerRules are the rules of the RBAC markers in dir's Go files.
func markerRules(dir string) ([]rbacv1.PolicyRule, error) {
	var out []rbacv1.PolicyRule
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && (strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rules, err := rbac.Markers(src)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, rules...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the markers: %w", err)
	}
	return out, nil
}

// grants are rules as "verb group/resource" (the core group ""), each once:
// the same grants however the rules are grouped.
func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					s := v + " " + res
					if g != "" {
						s = v + " " + g + "/" + res
					}
					for _, n := range r.ResourceNames {
						s += " (" + n + ")"
					}
					out = append(out, s)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// diff is what want has and have lacks, and what have has beyond want.
func diff(want, have []string) (missing, extra []string) {
	for _, w := range want {
		if !slices.Contains(have, w) {
			missing = append(missing, w)
		}
	}
	for _, h := range have {
		if !slices.Contains(want, h) {
			extra = append(extra, h)
		}
	}
	return missing, extra
}
