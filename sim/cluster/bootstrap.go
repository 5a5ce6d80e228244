package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The apiserver's RBAC post-start hook (rbac/bootstrap-roles) first tries a
// fixed second after the apiserver serves, then creates its default roles
// and bindings one by one (133 in v1.36.3); /healthz fails until it is
// done, and the operators, which are ServiceAccounts, cannot discover the
// API before it (system:discovery). rlab makes the same objects the moment
// the apiserver serves, so that the operators start a second sooner and
// the hook, when it runs, only reads them: it reconciles each object it
// finds and writes nothing when it finds it as it would have made it.
//
// Where the objects come from: a copy of what the hook itself made, taken
// after the first start of this kube-apiserver binary that got to /healthz
// (bootstrapCache, in the control plane's directory, if rlab may write
// there). Before there is one, rlab makes only the three roles the
// operators' discovery needs (bootstrapRoles).

// bootstrapLabel marks the hook's objects (bootstrappolicy's
// addDefaultMetadata).
const bootstrapLabel = "kubernetes.io/bootstrapping=rbac-defaults"

// bootstrapCache is the file, in the control plane's directory, holding the
// hook's objects as it made them on an earlier start of the same binaries.
const bootstrapCache = "bootstrap-rbac.json"

// bootstrapObjects are the hook's objects, as bootstrapCache holds them:
// name, namespace, labels, annotations and content, nothing the apiserver
// sets.
type bootstrapObjects struct {
	// Binary names the kube-apiserver binary that made them (binaryID):
	// another binary in the same directory makes the copy stale.
	Binary              string                      `json:"binary"`
	ClusterRoles        []rbacv1.ClusterRole        `json:"clusterRoles"`
	ClusterRoleBindings []rbacv1.ClusterRoleBinding `json:"clusterRoleBindings"`
	Roles               []rbacv1.Role               `json:"roles"`
	RoleBindings        []rbacv1.RoleBinding        `json:"roleBindings"`
}

func (b *bootstrapObjects) count() int {
	return len(b.ClusterRoles) + len(b.ClusterRoleBindings) + len(b.Roles) + len(b.RoleBindings)
}

// bootstrapRoles are three of the hook's ClusterRoles (k8s.io/kubernetes
// v1.36.3, plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go), with
// their bindings: what a ServiceAccount needs to discover the API
// (system:discovery, bound to every authenticated user). Made when there is
// no bootstrapCache yet. system:public-info-viewer's binding must exist with
// system:discovery's: where it is missing, the hook copies system:discovery's
// subjects into it (ClusterRoleBindingsToSplit), and unauthenticated users
// would lose it.
func bootstrapRoles() *bootstrapObjects {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"},
			Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}}
	}
	roles := []rbacv1.ClusterRole{
		{ObjectMeta: meta("system:discovery"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"},
			NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"}}}},
		{ObjectMeta: meta("system:basic-user"), Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
			{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}},
		}},
		{ObjectMeta: meta("system:public-info-viewer"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"},
			NonResourceURLs: []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}}}},
	}
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	bind := func(name string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
		return rbacv1.ClusterRoleBinding{ObjectMeta: meta(name), Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	}
	// In this order, one at a time (seedBootstrap's parallel 1): the
	// split binding before the one it would be split from.
	return &bootstrapObjects{ClusterRoles: roles, ClusterRoleBindings: []rbacv1.ClusterRoleBinding{
		bind("system:public-info-viewer", group("system:authenticated"), group("system:unauthenticated")),
		bind("system:basic-user", group("system:authenticated")),
		bind("system:discovery", group("system:authenticated")),
	}}
}

// binaryID names dir's kube-apiserver binary by its size and modification
// time: a rebuilt or replaced binary has another.
func binaryID(dir string) (string, error) {
	fi, err := os.Stat(filepath.Join(dir, "kube-apiserver"))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d-%d", fi.Size(), fi.ModTime().UnixNano()), nil
}

// loadBootstrap reads dir's bootstrapCache, if there is one that the
// binary there made: ok says so. One that cannot be read or that another
// binary made is no copy (saveBootstrap writes it again).
func loadBootstrap(dir string) (objs *bootstrapObjects, ok bool) {
	id, err := binaryID(dir)
	if err != nil {
		return nil, false
	}
	data, err := os.ReadFile(filepath.Join(dir, bootstrapCache))
	if err != nil {
		return nil, false
	}
	var b bootstrapObjects
	if json.Unmarshal(data, &b) != nil || b.Binary != id || len(b.ClusterRoles) == 0 || len(b.ClusterRoleBindings) == 0 {
		return nil, false
	}
	return &b, true
}

// bootstrapFieldManager names rlab in the objects' managedFields: a student
// who looks sees who made them.
const bootstrapFieldManager = "rlab"

// seedBootstrap makes objs, parallel at a time (1: in order), leaving any
// that exist. The namespaced ones live in kube-system and kube-public, which
// the apiserver makes a moment after it serves: whichever comes second
// finds them.
func seedBootstrap(ctx context.Context, cs kubernetes.Interface, objs *bootstrapObjects, parallel int) error {
	opts := metav1.CreateOptions{FieldManager: bootstrapFieldManager}
	nss := map[string]bool{}
	for _, r := range objs.Roles {
		nss[r.Namespace] = true
	}
	for _, b := range objs.RoleBindings {
		nss[b.Namespace] = true
	}
	for ns := range nss {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, opts); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	var g errgroup.Group
	g.SetLimit(parallel)
	create := func(what, name string, fn func() error) {
		g.Go(func() error {
			if err := fn(); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("bootstrap %s %s: %w", what, name, err)
			}
			return nil
		})
	}
	rbac := cs.RbacV1()
	for _, r := range objs.ClusterRoles {
		create("ClusterRole", r.Name, func() error { _, err := rbac.ClusterRoles().Create(ctx, &r, opts); return err })
	}
	for _, b := range objs.ClusterRoleBindings {
		create("ClusterRoleBinding", b.Name, func() error { _, err := rbac.ClusterRoleBindings().Create(ctx, &b, opts); return err })
	}
	for _, r := range objs.Roles {
		create("Role", r.Namespace+"/"+r.Name, func() error { _, err := rbac.Roles(r.Namespace).Create(ctx, &r, opts); return err })
	}
	for _, b := range objs.RoleBindings {
		create("RoleBinding", b.Namespace+"/"+b.Name, func() error { _, err := rbac.RoleBindings(b.Namespace).Create(ctx, &b, opts); return err })
	}
	return g.Wait()
}

// readBootstrap lists the hook's objects in a healthy apiserver, keeping
// what bootstrapCache keeps. An aggregated ClusterRole's rules are the
// aggregation controller's, not the hook's: they are left out.
func readBootstrap(ctx context.Context, cs kubernetes.Interface) (*bootstrapObjects, error) {
	list := metav1.ListOptions{LabelSelector: bootstrapLabel}
	rbac := cs.RbacV1()
	crs, err := rbac.ClusterRoles().List(ctx, list)
	if err != nil {
		return nil, err
	}
	crbs, err := rbac.ClusterRoleBindings().List(ctx, list)
	if err != nil {
		return nil, err
	}
	rs, err := rbac.Roles(metav1.NamespaceAll).List(ctx, list)
	if err != nil {
		return nil, err
	}
	rbs, err := rbac.RoleBindings(metav1.NamespaceAll).List(ctx, list)
	if err != nil {
		return nil, err
	}
	meta := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels, Annotations: m.Annotations}
	}
	b := &bootstrapObjects{}
	for _, r := range crs.Items {
		if r.AggregationRule != nil {
			r.Rules = nil
		}
		b.ClusterRoles = append(b.ClusterRoles, rbacv1.ClusterRole{ObjectMeta: meta(r.ObjectMeta), Rules: r.Rules, AggregationRule: r.AggregationRule})
	}
	for _, x := range crbs.Items {
		b.ClusterRoleBindings = append(b.ClusterRoleBindings, rbacv1.ClusterRoleBinding{ObjectMeta: meta(x.ObjectMeta), Subjects: x.Subjects, RoleRef: x.RoleRef})
	}
	for _, x := range rs.Items {
		b.Roles = append(b.Roles, rbacv1.Role{ObjectMeta: meta(x.ObjectMeta), Rules: x.Rules})
	}
	for _, x := range rbs.Items {
		b.RoleBindings = append(b.RoleBindings, rbacv1.RoleBinding{ObjectMeta: meta(x.ObjectMeta), Subjects: x.Subjects, RoleRef: x.RoleRef})
	}
	return b, nil
}

// saveBootstrap writes the hook's objects to dir's bootstrapCache, unless a
// copy the binary there made is in place: the same binary makes the same
// objects. A directory rlab may not write to (a shared install) only
// means no head start.
func saveBootstrap(ctx context.Context, cs kubernetes.Interface, dir string) error {
	if _, ok := loadBootstrap(dir); ok {
		return nil
	}
	id, err := binaryID(dir)
	if err != nil {
		return err
	}
	b, err := readBootstrap(ctx, cs)
	if err != nil {
		return fmt.Errorf("read the bootstrap RBAC: %w", err)
	}
	b.Binary = id
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, bootstrapCache)
	tmp, err := os.CreateTemp(dir, bootstrapCache+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone once renamed
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
