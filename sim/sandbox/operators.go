package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/shell"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/fault"
	"github.com/kkloud/rlab/sim/proxy"
	"github.com/kkloud/rlab/sim/rbac"
	"github.com/kkloud/rlab/sim/supervisor"
)

// Replicas are the replicas a built-in style runs by default: two that
// elect a leader, or the shell loop's one (it has no leader election).
// Operators.Replicas says what a running sandbox runs.
func Replicas(st style.Style) []string {
	if st.Traits().ElectsLeader {
		return replicaNames(2)
	}
	return replicaNames(1)
}

// replicaNames are n replica names: "a", "b", ...
func replicaNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = string(rune('a' + i))
	}
	return names
}

// MaxReplicas bounds the replicas of one operator (names "a" to "e").
const MaxReplicas = 5

// Replicas are the replicas style st runs in this sandbox.
func (o *Operators) Replicas(st style.Style) []string { return o.plan.of(st) }

// Custom is a student's own Echo operator (`--operator NAME=COMMAND`). rlab
// runs it as it runs its own, in namespace echo-NAME as ServiceAccount
// echo-NAME-operator, through a counting proxy per replica; it knows the
// operator only from outside (its requests, and what the cluster shows).
type Custom struct {
	Name style.Style // from style.Custom
	// Command is a shell command line, run by /bin/sh -c in rlab's working
	// directory with KUBECONFIG, WATCH_NAMESPACE, POD_NAMESPACE, POD_NAME
	// and ECHO_IMAGE set, and rlab's kubectl first on PATH.
	Command string
	// Script, if set instead of Command, is a bash script the sandbox
	// writes to its run dir and runs: a lesson's own starter operator, of
	// which the student may have no file yet. Start sets Command to run it.
	Script []byte
	// Project, if set instead of Command and Script, is a Go module (files
	// by slash-separated path: "cmd/main.go") the sandbox writes to a
	// folder of its run dir and runs there with go run ./cmd: a lesson's
	// starter project. Start sets Command to run it.
	Project map[string][]byte
	// Replicas to run (1 if 0), named "a", "b", ...
	Replicas int
	// Role is RoleLeast (the default) or RoleNamespaceAdmin.
	Role string
	// RBAC, if set, is granted instead of the course's Role: what the
	// operator's own project declares (rbac.Load). Its ClusterRoles hold
	// cluster-wide where the cluster is this sandbox's alone, in the
	// operator's namespace only on a shared one. It excludes
	// RoleNamespaceAdmin.
	RBAC *rbac.Grant
	// Shipped: the operator runs in the cluster, as a Deployment of its own
	// image (sim/ship) under its ServiceAccount. The sandbox gives it its
	// namespace, ServiceAccount and RBAC and starts no replica, proxy or
	// kubeconfig for it; Command, Script and Project are unused.
	Shipped bool
}

// Roles of a custom operator.
const (
	// RoleLeast is the Role the course teaches an Echo operator.
	RoleLeast = "least"
	// RoleNamespaceAdmin binds cluster-admin in the operator's namespace
	// only: for an operator that needs more, while the student finds out
	// what (rlab check still lists what least privilege would deny).
	RoleNamespaceAdmin = "namespace-admin"
)

// roleOwn is setupStyle's word for an operator granted its own RBAC
// (Custom.RBAC): no course Role is bound to it.
const roleOwn = "own"

// ParseRole checks a custom operator's role; "" is RoleLeast.
func ParseRole(r string) (string, error) {
	switch r {
	case "", RoleLeast:
		return RoleLeast, nil
	case RoleNamespaceAdmin:
		return r, nil
	}
	return "", fmt.Errorf("unknown operator role %q: use %s or %s", r, RoleLeast, RoleNamespaceAdmin)
}

// Customs is the part of the engine that owns the student's own operators
// (Options.Custom): what each runs, and the run dir where a lesson writes
// the next version of one. Their replicas are the supervisor's, as every
// operator's.
type Customs struct {
	super restarter
	plan  replicaPlan
	dir   string // the run dir's operators folder

	mu sync.Mutex // one change of command or replicas at a time
	// spare are the replicas each custom operator run here may gain
	// (SetReplicas), by name ("mine/b"): each spec's proxy and kubeconfig
	// are made at start, so that a replica gained later is counted and
	// faulted as the first ones are.
	spare map[string]supervisor.Spec
	// args are what SetReplicas added to an operator's command line, kept
	// when a lesson swaps in its next version.
	args map[style.Style]string
}

// Custom is the custom operator named st, if it is one.
func (c *Customs) Custom(st style.Style) (Custom, bool) {
	if cu := c.plan.customOf(st); cu != nil {
		return *cu, true
	}
	return Custom{}, false
}

// Env names a custom operator finds its cluster and namespace by.
const (
	EnvKubeconfig     = "KUBECONFIG"
	EnvWatchNamespace = "WATCH_NAMESPACE"
	EnvPodNamespace   = "POD_NAMESPACE"
	EnvPodName        = "POD_NAME"
	EnvImage          = "ECHO_IMAGE"
)

// replicaFile is the file of one replica in dir: <style>-<replica><ext>.
func replicaFile(dir string, st style.Style, replica, ext string) string {
	return filepath.Join(dir, string(st)+"-"+replica+ext)
}

// CourseRules are the Role the course teaches an Echo operator (lesson
// 10's table): its Echoes and their status, the Deployments it owns, the
// registry ConfigMap a finalizer keeps (lessons 9 and 20), reading
// ConfigMaps (the namespace's echo-defaults), Events, and a Lease for
// leader election. A custom operator runs with these, and rlab check
// measures any operator against them.
func CourseRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{echov1.Group}, Resources: []string{echov1.Plural}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{echov1.Group}, Resources: []string{echov1.Plural + "/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{echo.RegistryName}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
	}
}

// rules are all an operator may do in its own namespace, and no more.
func rules(st style.Style) []rbacv1.PolicyRule {
	if !st.Traits().Builtin {
		return CourseRules()
	}
	r := []rbacv1.PolicyRule{
		// update and patch: finalizers live in the Echo's metadata.
		{APIGroups: []string{echov1.Group}, Resources: []string{echov1.Plural}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{echov1.Group}, Resources: []string{echov1.Plural + "/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		// The registry ConfigMap that --finalizer keeps.
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{echo.RegistryName}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
		// The default message of Echoes with none, echo-defaults: the shell
		// loop gets it, client-go lists and watches it alone (a field
		// selector on its name), controller-runtime's cache every ConfigMap
		// of the namespace unless narrowed (--defaults-cache named).
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
		// Events on Echoes (a Deployment it will not take over). The
		// leader election records none: its locks have no EventRecorder.
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
	if st.Traits().ElectsLeader {
		r = append(r,
			rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}})
	}
	return r
}

// OperatorRules are style st's least-privilege rules, for whoever prepares
// its namespaces ahead of time (`rlab classroom prepare`).
func OperatorRules(st style.Style) []rbacv1.PolicyRule { return rules(st) }

// ServiceAccount is the ServiceAccount a style's operator runs as in its
// namespace: its replicas' identity, and a shipped operator's pods'.
func ServiceAccount(st style.Style) string { return st.Operator() }

// RoleName is the Role (and RoleBinding) of a style in its namespace.
const RoleName = "echo-operator"

// setupStyle gives a style its namespace ns, its operator's ServiceAccount
// (the identity every replica runs as), Role and RoleBinding. Each is read
// first and only created (or, for the Role, reset) when missing or changed:
// in a classroom the instructor made them and a student may only read and
// update them. owned says whether the namespace was created here (labels
// mark it); on a shared cluster only an owned namespace is deleted at exit.
// With roleName roleOwn there is no course Role: the caller grants the
// operator's own RBAC.
func setupStyle(ctx context.Context, admin *rest.Config, cs kubernetes.Interface, ns string, labels map[string]string, st style.Style, roleName string) (id *cluster.Identity, owned bool, err error) {
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}},
		metav1.CreateOptions{})
	switch {
	case err == nil:
		owned = true
	case apierrors.IsAlreadyExists(err), apierrors.IsForbidden(err):
		// Prepared by an administrator (Forbidden: a student may not
		// create namespaces), or made by the cluster's owner: use it.
	default:
		return nil, false, fmt.Errorf("namespace %s: %w", ns, err)
	}
	if id, err = cluster.ServiceAccount(ctx, admin, ns, st.Operator()); err != nil {
		return nil, owned, err
	}
	if roleName == roleOwn {
		return id, owned, noCourseBinding(ctx, cs, ns, owned)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: RoleName, Namespace: ns}, Rules: rules(st)}
	got, err := cs.RbacV1().Roles(ns).Get(ctx, RoleName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
	case err == nil && !equality.Semantic.DeepEqual(got.Rules, role.Rules):
		// A lesson of an earlier run changed it: start least-privileged.
		got.Rules = role.Rules
		_, err = cs.RbacV1().Roles(ns).Update(ctx, got, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, owned, fmt.Errorf("role in %s: %w", ns, err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: RoleName, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RoleName},
		Subjects:   []rbacv1.Subject{id.Subject},
	}
	if _, err = cs.RbacV1().RoleBindings(ns).Get(ctx, RoleName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, owned, fmt.Errorf("rolebinding in %s: %w", ns, err)
	}
	if roleName == RoleNamespaceAdmin {
		admin := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: RoleName + "-admin", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{id.Subject},
		}
		if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, admin, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, owned, fmt.Errorf("widen the operator's role in %s: %w", ns, err)
		}
	}
	return id, owned, nil
}

// noCourseBinding fails if namespace ns, made by someone else, binds the
// course's Role to its operator already: an operator granted its own RBAC
// would hold both, and be graded on more than it declares.
func noCourseBinding(ctx context.Context, cs kubernetes.Interface, ns string, owned bool) error {
	if owned {
		return nil
	}
	_, err := cs.RbacV1().RoleBindings(ns).Get(ctx, RoleName, metav1.GetOptions{})
	switch {
	case err == nil:
		return fmt.Errorf("namespace %s binds the course's Role to its operator already (RoleBinding %s), which its own RBAC would add to: delete the RoleBinding, or grade it with the course's Role", ns, RoleName)
	case apierrors.IsNotFound(err):
		return nil
	}
	return fmt.Errorf("rolebinding in %s: %w", ns, err)
}

// scriptCommand is the command line that runs the bash script at path.
func scriptCommand(path string) string { return "bash " + shellQuote(path) }

// shellQuote quotes s for /bin/sh, whatever it holds.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// writeScript writes a custom operator's script as <style>-<name> in the
// operators dir, and returns the command line that runs it.
func writeScript(dir string, st style.Style, name string, script []byte) (string, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name[0] == '.' {
		return "", fmt.Errorf("script name %q: want a plain file name", name)
	}
	path := replicaFile(dir, st, name, "")
	if err := os.WriteFile(path, script, 0o700); err != nil {
		return "", fmt.Errorf("script of %s: %w", st, err)
	}
	return scriptCommand(path), nil
}

// ProjectCommand is the command line that runs the Go module in dir, as a
// student runs theirs: go run ./cmd, from its folder.
func ProjectCommand(dir string) string { return "cd " + shellQuote(dir) + projectRun }

const projectRun = " && exec go run ./cmd"

// projectDirOf is the folder of a command ProjectCommand made.
func projectDirOf(command string) (string, bool) {
	q, ok := strings.CutPrefix(command, "cd '")
	if !ok {
		return "", false
	}
	q, ok = strings.CutSuffix(q, "'"+projectRun)
	if !ok {
		return "", false
	}
	return strings.ReplaceAll(q, `'\''`, "'"), true
}

// writeProject writes a custom operator's Go project to folder
// <style>-<name> in the operators dir, over any version written there
// before, and returns the command line that runs it.
func writeProject(operators string, st style.Style, name string, files map[string][]byte) (string, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name[0] == '.' {
		return "", fmt.Errorf("project name %q: want a plain folder name", name)
	}
	dir := replicaFile(operators, st, name, "")
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("project of %s: %w", st, err)
	}
	if err := WriteProject(dir, files); err != nil {
		return "", fmt.Errorf("project of %s: %w", st, err)
	}
	return ProjectCommand(dir), nil
}

// SourcePlaceholder, in a project's go.mod, stands for rlab's source tree:
// a lesson's project whose tests use sim/testenv replaces rlab's module
// with it (replace github.com/kkloud/rlab => RLAB_SOURCE). WriteProject
// writes the tree's path in its place.
const SourcePlaceholder = "RLAB_SOURCE"

// WriteProject writes a Go project's files (by slash-separated path in it)
// under dir, making the folders they need; in go.mod, rlab's source tree
// for SourcePlaceholder.
func WriteProject(dir string, files map[string][]byte) error {
	// Before any file is written: a project that cannot build is not
	// written half.
	if data := files["go.mod"]; bytes.Contains(data, []byte("=> "+SourcePlaceholder)) {
		root, err := assets.SourceRoot(os.Getenv)
		if err != nil {
			return fmt.Errorf("this project's tests use rlab's testenv package, from rlab's source tree: %w", err)
		}
		files = maps.Clone(files)
		files["go.mod"] = bytes.ReplaceAll(data, []byte("=> "+SourcePlaceholder), []byte("=> "+root))
	}
	for p, data := range files {
		rel := filepath.FromSlash(p)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("%q is not a path inside the project", p)
		}
		full := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CustomCommand is the command line custom operator st's replicas run now,
// without what SetReplicas added to it.
func (c *Customs) CustomCommand(st style.Style) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.command(st)
}

// command is CustomCommand, with c.mu held.
func (c *Customs) command(st style.Style) (string, error) {
	if c.plan.customOf(st) == nil {
		return "", fmt.Errorf("no operator %s in this sandbox", st)
	}
	sp, err := c.super.Spec(st.Source(c.plan.of(st)[0]))
	if err != nil {
		return "", err
	}
	if len(sp.Args) != 2 || sp.Args[0] != "-c" {
		return "", fmt.Errorf("operator %s runs %q, not a command line", st, sp.Args)
	}
	return strings.TrimSuffix(sp.Args[1], c.args[st]), nil
}

// ProjectDir is the folder of the Go project custom operator st runs now:
// the lesson's version written to the run dir, or, for a command of the
// student's (go run ./cmd), rlab's working directory if it holds a go.mod.
func (c *Customs) ProjectDir(st style.Style) (string, error) {
	command, err := c.CustomCommand(st)
	if err != nil {
		return "", err
	}
	if dir, ok := projectDirOf(command); ok {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(wd, "go.mod")); err != nil {
		return "", fmt.Errorf("operator %s runs %q in %s, which holds no go.mod: start the lesson from your project's folder", st, command, wd)
	}
	return wd, nil
}

// setCustomCommand restarts every replica of custom operator st with
// another command line (and the arguments SetReplicas added), at once and
// gracefully (SIGTERM): a new version of the student's operator takes over
// from the old one.
func (c *Customs) setCustomCommand(st style.Style, command string) error {
	if c.plan.customOf(st) == nil {
		return fmt.Errorf("no operator %s in this sandbox", st)
	}
	if strings.TrimSpace(command) == "" {
		return fmt.Errorf("operator %s: no command to run", st)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restartAll(st, command+c.args[st])
}

// restartAll restarts every replica of st running line, with c.mu held.
func (c *Customs) restartAll(st style.Style, line string) error {
	for _, r := range c.plan.of(st) {
		if err := c.super.SetArgs(st.Source(r), []string{"-c", line}); err != nil {
			return fmt.Errorf("restart %s: %w", st.Source(r), err)
		}
	}
	return nil
}

// SetReplicas runs custom operator st as n replicas ("a", "b", …), each
// with its own proxy, kubeconfig and POD_NAME, as replicas started with
// the sandbox are; every one runs the operator's command line with args
// (flags, each a word: "--leader-elect") added, in place of any added
// before. Replicas that run already are restarted only if their command
// line changes. A lesson's two replicas electing a leader start so.
func (c *Customs) SetReplicas(st style.Style, n int, args string) error {
	cu := c.plan.customOf(st)
	switch {
	case cu == nil:
		return fmt.Errorf("no operator %s in this sandbox", st)
	case cu.Shipped:
		return fmt.Errorf("operator %s runs in the cluster, as a Deployment: its replicas are the Deployment's (rlab do ship %s --replicas N)", st, st)
	case n < 1 || n > MaxReplicas:
		return fmt.Errorf("%d replicas of %s: want 1 to %d", n, st, MaxReplicas)
	}
	suffix, err := argsSuffix(args)
	if err != nil {
		return fmt.Errorf("operator %s: %w", st, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	command, err := c.command(st)
	if err != nil {
		return err
	}
	return c.setReplicas(st, n, suffix, command)
}

// setReplicas is SetReplicas with c.mu held: n replicas running command
// plus suffix.
func (c *Customs) setReplicas(st style.Style, n int, suffix, command string) error {
	if c.plan.live == nil {
		return fmt.Errorf("operator %s: its replicas are fixed in this sandbox", st)
	}
	line := command + suffix
	cur := c.plan.of(st)
	// Fewer: out of the plan first, so that nothing walks a replica that is
	// going; more: in the plan last, once they run.
	if n < len(cur) {
		c.plan.live.set(st, n)
		for _, r := range cur[n:] {
			if err := c.super.Remove(st.Source(r), 5*time.Second); err != nil {
				return fmt.Errorf("stop %s: %w", st.Source(r), err)
			}
		}
		cur = cur[:n]
	}
	if c.args == nil {
		c.args = map[style.Style]string{}
	}
	c.args[st] = suffix
	for _, r := range cur {
		sp, err := c.super.Spec(st.Source(r))
		if err != nil {
			return err
		}
		if len(sp.Args) == 2 && sp.Args[1] == line {
			continue
		}
		if err := c.super.SetArgs(st.Source(r), []string{"-c", line}); err != nil {
			return fmt.Errorf("restart %s: %w", st.Source(r), err)
		}
	}
	for _, r := range replicaNames(n)[len(cur):] {
		sp, ok := c.spare[st.Source(r)]
		if !ok {
			return fmt.Errorf("operator %s has no replica %s to start here", st, r)
		}
		sp.Args = []string{"-c", line}
		if err := c.super.Add(sp); err != nil {
			return fmt.Errorf("start %s: %w", st.Source(r), err)
		}
	}
	c.plan.live.set(st, n)
	return nil
}

// argsSuffix is what args add to a command line: each word a flag
// ("--leader-elect", "--name=value"), quoted for /bin/sh.
func argsSuffix(args string) (string, error) {
	var b strings.Builder
	for _, w := range strings.Fields(args) {
		if !strings.HasPrefix(w, "-") {
			return "", fmt.Errorf("argument %q: want flags only, each starting with -", w)
		}
		b.WriteString(" " + shellQuote(w))
	}
	return b.String(), nil
}

// RunCustomScript writes script to the run dir as <style>-<name> and
// restarts custom operator st running it with bash: a lesson swaps in the
// next version of its operator so.
func (c *Customs) RunCustomScript(st style.Style, name string, script []byte) error {
	if c.plan.customOf(st) == nil {
		return fmt.Errorf("no operator %s in this sandbox", st)
	}
	command, err := writeScript(c.dir, st, name, script)
	if err != nil {
		return err
	}
	return c.setCustomCommand(st, command)
}

// RunCustomProject writes Go project files to the run dir as folder
// <style>-<name> and restarts custom operator st running it with go run: a
// lesson swaps in the next version of its project so.
func (c *Customs) RunCustomProject(st style.Style, name string, files map[string][]byte) error {
	if c.plan.customOf(st) == nil {
		return fmt.Errorf("no operator %s in this sandbox", st)
	}
	command, err := writeProject(c.dir, st, name, files)
	if err != nil {
		return err
	}
	return c.setCustomCommand(st, command)
}

// ResetCustom restarts custom operator st as it started: its command, with
// nothing added, and as many replicas, if it runs otherwise now.
func (c *Customs) ResetCustom(st style.Style) error {
	cu := c.plan.customOf(st)
	if cu == nil {
		return fmt.Errorf("no operator %s in this sandbox", st)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now, err := c.command(st)
	if err != nil {
		return err
	}
	if now == cu.Command && c.args[st] == "" && len(c.plan.of(st)) == cu.Replicas {
		return nil
	}
	if c.plan.live == nil {
		return c.restartAll(st, cu.Command)
	}
	return c.setReplicas(st, cu.Replicas, "", cu.Command)
}

// replicaArgs is the command line of one replica; shellScript and kubectl
// are the shell loop's script and kubectl.
func (s *Sandbox) replicaArgs(st style.Style, replica, kubeconfig, shellScript, kubectl string, webhook *webhookServer) (string, []string) {
	ns := s.sc.namespace(st)
	if c := s.ops.plan.customOf(st); c != nil {
		return "/bin/sh", []string{"-c", c.Command}
	}
	if st == style.Shell {
		return "bash", []string{shellScript, "--kubeconfig", kubeconfig, "--namespace", ns,
			"--interval", strconv.Itoa(int(s.opts.ShellInterval / time.Second)),
			"--kubectl", kubectl, "--replica", replica, "--image", s.opts.Image}
	}
	args := []string{"operator", string(st), "--kubeconfig", kubeconfig, "--namespace", ns, "--replica", replica,
		"--image", s.opts.Image}
	if slices.Contains(s.opts.Unwatched, st) {
		args = append(args, "--watch-owned=false")
	}
	args = append(args, webhook.args(st, replica)...)
	return s.opts.Self, args
}

// startOperators gives each style one proxy per replica (Faults') and the
// replicas themselves (the supervisor, which Operators, Flags and Customs
// drive), running as the style's identity.
func (s *Sandbox) startOperators(identities map[style.Style]*cluster.Identity, webhook *webhookServer) (run func(context.Context) error, err error) {
	dir := s.customs.dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("operators dir: %w", err)
	}
	shellScript := filepath.Join(dir, "echo-operator.sh")
	if err := os.WriteFile(shellScript, shell.Script, 0o700); err != nil {
		return nil, fmt.Errorf("shell operator: %w", err)
	}
	// kubectl runs as it is: it stays in bash's process group, which dies
	// with rlab (its lifeline watcher), when the supervisor signals the
	// replica, and when bash exits (proc.StartCmd).
	kubectl := filepath.Join(s.opts.Assets, "kubectl")
	super := supervisor.New(supervisor.Options{
		PIDDir: s.opts.State.PIDs(), Publish: s.bus.Publish, Log: s.opts.Log,
		// Longer than the Lease (4 s): after a kill, the standby takes over
		// before the crashed replica is back, which then waits as standby.
		Backoff: 5 * time.Second,
	})
	s.ops.super, s.flags.super, s.customs.super = super, super, super
	bin := filepath.Join(dir, "bin")
	if err := linkKubectl(bin, kubectl); err != nil {
		return nil, err
	}
	for i := range s.opts.Custom {
		// Before any replica starts, and only here: Custom's fields stay
		// as they are from then on.
		if c := &s.opts.Custom[i]; c.Script != nil && c.Command == "" {
			command, err := writeScript(dir, c.Name, "starter.sh", c.Script)
			if err != nil {
				return nil, err
			}
			c.Command = command
		}
		if c := &s.opts.Custom[i]; c.Project != nil && c.Command == "" {
			command, err := writeProject(dir, c.Name, "starter", c.Project)
			if err != nil {
				return nil, err
			}
			c.Command = command
		}
	}
	tmp := s.cluster.tmp
	cacheEnv := kubectlCacheEnv(tmp)
	// replica makes replica r of st its proxy and kubeconfig, and returns
	// what the supervisor runs.
	replica := func(st style.Style, r string, id *cluster.Identity) (supervisor.Spec, error) {
		name := st.Source(r)
		p, err := proxy.Start(proxy.Options{Name: name, Upstream: id.Config, Publish: s.bus.Publish, Log: s.opts.Log,
			// The crash fault's, once the supervisor runs: one kill
			// per style, so the replica that takes over is not
			// killed at its first write as well.
			Kill: func() error {
				s.faults.ClearFault(st, fault.Crash)
				return super.Kill(name)
			}})
		if err != nil {
			return supervisor.Spec{}, fmt.Errorf("proxy for %s: %w", name, err)
		}
		s.faults.proxies[name] = p
		kc, err := p.Kubeconfig(s.sc.namespace(st))
		if err != nil {
			return supervisor.Spec{}, err
		}
		kcPath := replicaFile(dir, st, r, ".kubeconfig")
		if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
			return supervisor.Spec{}, fmt.Errorf("kubeconfig for %s: %w", name, err)
		}
		path, args := s.replicaArgs(st, r, kcPath, shellScript, kubectl, webhook)
		spec := supervisor.Spec{
			Style: st, Replica: r, Path: path, Args: args,
			Env:      []string{"RLAB_TRACE=1", "TMPDIR=" + tmp, cacheEnv},
			LogFile:  replicaFile(s.opts.State.Logs(), st, r, ".log"),
			Untraced: !st.Traits().Traces,
		}
		// A student's own command is told where it runs by the
		// environment, as a Pod would be.
		if !st.Traits().Builtin {
			ns := s.sc.namespace(st)
			spec.Env = []string{
				EnvKubeconfig + "=" + kcPath, EnvWatchNamespace + "=" + ns, EnvPodNamespace + "=" + ns,
				EnvPodName + "=" + string(st) + "-" + r, EnvImage + "=" + s.opts.Image,
				"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "TMPDIR=" + tmp,
				cacheEnv,
			}
		}
		return spec, nil
	}
	var specs []supervisor.Spec
	s.customs.spare = map[string]supervisor.Spec{}
	for _, st := range s.sc.styles {
		c, custom := s.customs.Custom(st)
		if custom && c.Shipped {
			continue // its pods run in the cluster
		}
		planned := s.ops.plan.of(st)
		for _, r := range planned {
			spec, err := replica(st, r, identities[st])
			if err != nil {
				return nil, err
			}
			specs = append(specs, spec)
		}
		if !custom {
			continue
		}
		for _, r := range replicaNames(MaxReplicas)[len(planned):] {
			spec, err := replica(st, r, identities[st])
			if err != nil {
				return nil, err
			}
			s.customs.spare[st.Source(r)] = spec
		}
	}
	return func(ctx context.Context) error {
		for _, spec := range specs {
			if err := ctx.Err(); err != nil {
				return err // stopping: start no more
			}
			if err := super.Add(spec); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// kubectlCacheEnv points kubectl's discovery and HTTP cache (kubectl's
// --cache-dir, $HOME/.kube/cache by default) into the run dir, removed with
// the sandbox: each sandbox's proxies listen on new ports, and kubectl keeps
// a cache per host:port, so the shell loop alone left about 1 MB in the
// student's home for every sandbox started.
func kubectlCacheEnv(tmp string) string {
	return "KUBECACHEDIR=" + kubectlCacheDir(tmp)
}

// linkKubectl puts rlab's kubectl alone in dir, which goes first on a custom
// operator's PATH: a bash operator finds the kubectl that matches the
// cluster, and nothing else of the control plane's binaries.
func linkKubectl(dir, kubectl string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("operators bin dir: %w", err)
	}
	if err := os.Symlink(kubectl, filepath.Join(dir, "kubectl")); err != nil {
		return fmt.Errorf("kubectl for custom operators: %w", err)
	}
	return nil
}
