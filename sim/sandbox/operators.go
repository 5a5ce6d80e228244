package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/shell"
	"github.com/kkloud/rlab/sim/proc"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/supervisor"
)

// The three operator styles, in screen order.
const (
	Shell    = "shell"
	ClientGo = "clientgo"
	Runtime  = "runtime"
)

// Styles are all styles, in screen order.
var Styles = []string{Shell, ClientGo, Runtime}

// Namespace is the namespace a style's operator owns: echo-<style>.
func Namespace(style string) string { return "echo-" + style }

// Replicas are the replicas each style runs: the Go styles elect a leader
// between two; the shell loop has no leader election and runs one.
func Replicas(style string) []string {
	if style == Shell {
		return []string{"a"}
	}
	return []string{"a", "b"}
}

// User is the identity a style's operator runs as.
func User(style string) string { return "echo-" + style + "-operator" }

// rules are all an operator may do in its own namespace, and no more.
func rules(style string) []rbacv1.PolicyRule {
	r := []rbacv1.PolicyRule{
		// update and patch: finalizers live in the Echo's metadata.
		{APIGroups: []string{echov1.Group}, Resources: []string{echov1.Plural}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{echov1.Group}, Resources: []string{echov1.Plural + "/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		// The registry ConfigMap that --finalizer keeps.
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{echo.RegistryName}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
	}
	if style != Shell { // leader election and its events
		r = append(r,
			rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
			rbacv1.PolicyRule{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		)
	}
	return r
}

// RoleName is the Role (and RoleBinding) of a style in its namespace.
const RoleName = "echo-operator"

// setupStyle creates a style's namespace, Role and RoleBinding.
func setupStyle(ctx context.Context, cs kubernetes.Interface, style string) error {
	ns := Namespace(style)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: RoleName, Namespace: ns}, Rules: rules(style)}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("role in %s: %w", ns, err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: RoleName, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RoleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: User(style)}},
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("rolebinding in %s: %w", ns, err)
	}
	return nil
}

// replicaArgs is the command line of one replica.
func (s *Sandbox) replicaArgs(style, replica, kubeconfig string) (string, []string) {
	ns := Namespace(style)
	if style == Shell {
		return "bash", []string{s.shellScript, "--kubeconfig", kubeconfig, "--namespace", ns,
			"--interval", strconv.Itoa(int(s.opts.ShellInterval / time.Second)),
			"--kubectl", s.shellKubectl, "--replica", replica}
	}
	args := []string{"operator", style, "--kubeconfig", kubeconfig, "--namespace", ns, "--replica", replica}
	if slices.Contains(s.opts.Unwatched, style) {
		args = append(args, "--watch-owned=false")
	}
	return s.opts.Self, args
}

// startOperators gives each style its namespace, identity, Role, one proxy
// per replica and the replicas themselves.
func (s *Sandbox) startOperators() error {
	dir := filepath.Join(s.opts.State.Run(), "operators")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("operators dir: %w", err)
	}
	s.shellScript = filepath.Join(dir, "echo-operator.sh")
	if err := os.WriteFile(s.shellScript, shell.Script, 0o700); err != nil {
		return fmt.Errorf("shell operator: %w", err)
	}
	// bash dies with rlab (parent-death signal); the kubectl it is running at
	// that moment must die with bash, not run on as an orphan.
	kubectl, err := proc.WriteCallerWrapper(filepath.Join(dir, "bin"), "kubectl", s.opts.Self, filepath.Join(s.opts.Assets, "kubectl"))
	if err != nil {
		return err
	}
	s.shellKubectl = kubectl
	s.super = supervisor.New(supervisor.Options{
		PIDDir: s.opts.State.PIDs(), Publish: s.bus.Publish, Log: s.opts.Log,
		// Longer than the Lease (4 s): after a kill, the standby takes over
		// before the crashed replica is back, which then waits as standby.
		Backoff: 5 * time.Second,
	})
	for _, style := range s.opts.Styles {
		user, err := s.backend.AddUser(User(style), []string{"rlab:operators"})
		if err != nil {
			return err
		}
		for _, r := range Replicas(style) {
			name := style + "/" + r
			p, err := proxy.Start(proxy.Options{Name: name, Upstream: user, Publish: s.bus.Publish, Log: s.opts.Log})
			if err != nil {
				return fmt.Errorf("proxy for %s: %w", name, err)
			}
			s.proxies[name] = p
			kc, err := p.Kubeconfig(Namespace(style))
			if err != nil {
				return err
			}
			kcPath := filepath.Join(dir, style+"-"+r+".kubeconfig")
			if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
				return fmt.Errorf("kubeconfig for %s: %w", name, err)
			}
			path, args := s.replicaArgs(style, r, kcPath)
			if err := s.super.Add(supervisor.Spec{
				Style: style, Replica: r, Path: path, Args: args,
				Env:     []string{"RLAB_TRACE=1"},
				LogFile: filepath.Join(s.opts.State.Logs(), style+"-"+r+".log"),
			}); err != nil {
				return err
			}
		}
	}
	return nil
}
