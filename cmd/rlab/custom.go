package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kkloud/rlab/cmd/rlab/internal/launch"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/rbac"
	"github.com/kkloud/rlab/sim/sandbox"
)

// operatorFlags add a student's own operators to a sandbox, each with a pane:
// --operator NAME=COMMAND, repeatable.
type operatorFlags struct {
	Operators []string
	Role      string
	RBAC      string
}

func (f *operatorFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.Operators, "operator", nil,
		"run your own Echo operator beside the built-in ones: `NAME=COMMAND` (repeatable). It runs by /bin/sh -c in namespace echo-NAME with "+
			sandbox.EnvKubeconfig+", "+sandbox.EnvWatchNamespace+", "+sandbox.EnvPodNamespace+", "+sandbox.EnvPodName+" and "+sandbox.EnvImage+" set, and rlab's kubectl on PATH")
	fs.StringVar(&f.Role, "operator-role", sandbox.RoleLeast,
		"what your operators may do: "+sandbox.RoleLeast+" (the course's Role: Echoes, their status, Deployments, reading ConfigMaps, Events, Leases) or "+
			sandbox.RoleNamespaceAdmin+" (everything in its own namespace)")
	fs.StringVar(&f.RBAC, "rbac", "", rbacUsage("your operators"))
}

// rbacUsage is --rbac's help, for whom it grants.
func rbacUsage(whom string) string {
	return "grant " + whom + " the RBAC in `PATH` instead of the course's Role: a project's folder " +
		"(kubebuilder's config/rbac: the roles its bindings bind to a ServiceAccount) or a YAML file of roles. " +
		"A ClusterRole holds cluster-wide on envtest and kind, in the operator's namespace only on a shared cluster (--backend kubeconfig)"
}

// ownRBAC loads --rbac PATH, if given: what the operator is granted
// instead of the course's Role, or the one error that says what to fix.
func ownRBAC(path, role string) (*rbac.Grant, error) {
	if path == "" {
		return nil, nil
	}
	if role == sandbox.RoleNamespaceAdmin {
		return nil, fmt.Errorf("--rbac and --operator-role %s exclude each other: --rbac grants what %s declares instead of the course's Role; give one or the other", role, path)
	}
	g, err := rbac.Load(path)
	if err != nil {
		return nil, fmt.Errorf("--rbac: %w", err)
	}
	return g, nil
}

// apply checks the flags and adds the operators to o.
func (f operatorFlags) apply(o *launch.Options) error {
	role, err := sandbox.ParseRole(f.Role)
	if err != nil {
		return fmt.Errorf("--operator-role: %w", err)
	}
	if f.RBAC != "" && len(f.Operators) == 0 {
		return fmt.Errorf("--rbac %s: no --operator to grant it to", f.RBAC)
	}
	g, err := ownRBAC(f.RBAC, role)
	if err != nil {
		return err
	}
	for _, spec := range f.Operators {
		c, err := parseOperator(spec)
		if err != nil {
			return err
		}
		c.Role, c.RBAC = role, g
		for _, have := range o.Custom {
			if have.Name == c.Name {
				return fmt.Errorf("--operator %s: two operators are named %s", spec, c.Name)
			}
		}
		o.Custom = append(o.Custom, c)
	}
	return nil
}

// parseOperator reads NAME=COMMAND.
func parseOperator(spec string) (sandbox.Custom, error) {
	name, command, ok := strings.Cut(spec, "=")
	if !ok || strings.TrimSpace(command) == "" {
		return sandbox.Custom{}, fmt.Errorf("--operator %q: want NAME=COMMAND, e.g. --operator mine=./my-operator.sh", spec)
	}
	st, err := style.Custom(name)
	if err != nil {
		return sandbox.Custom{}, fmt.Errorf("--operator %q: %w", spec, err)
	}
	return sandbox.Custom{Name: st, Command: command}, nil
}
