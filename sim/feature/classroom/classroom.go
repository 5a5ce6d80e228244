// Package classroom prepares one shared cluster for a workshop: the Echo
// CRD, and for each student three namespaces with the operators' identities
// and a kubeconfig that may do only what the lessons need there. A student
// then runs `rlab run --backend kubeconfig --kubeconfig sN.kubeconfig` and
// needs no other right on the cluster.
package classroom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/tenancy"
)

// LabelClassroom marks what `prepare` made, with the student's name (or
// "crd", "classroom"); teardown removes exactly what carries it.
const LabelClassroom = "rlab.kkloud.io/classroom"

// StudentRole is each student's Role in each of their namespaces.
const StudentRole = "rlab-student"

// Student is the name of student i (from 1): "s1".
func Student(i int) string { return "s" + strconv.Itoa(i) }

// Prefix is a student's namespace prefix, the one their rlab derives from
// their identity (tenancy.DefaultPrefix): "rlab-s1-".
func Prefix(student string) style.Prefix { return style.UserPrefix(student) }

// StudentRules are what a student may do in each of their namespaces: what
// the screen watches, what the lessons change (Echoes, Deployments, the
// operators' Role), and a token for their operators' ServiceAccount. RBAC
// lets a student update the operators' Role only because this holds every
// rule of it. A student may act as their operators' ServiceAccounts
// (kubectl auth can-i --list --as=system:serviceaccount:…, lesson 10),
// which may do no more than the student.
func StudentRules() []rbacv1.PolicyRule {
	rw := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	ro := []string{"get", "list", "watch"}
	var operators []string
	for _, st := range style.All() {
		operators = append(operators, st.Operator())
	}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{echov1.Group}, Resources: []string{echov1.Plural}, Verbs: append(rw, "deletecollection")},
		{APIGroups: []string{echov1.Group}, Resources: []string{echov1.Plural + "/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: rw},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: ro},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: rw},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: rw},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: ro},
		// What the namespace may hold (prepare's quota), to see why the
		// apiserver refused a create: kubectl describe quota.
		{APIGroups: []string{""}, Resources: []string{"resourcequotas", "limitranges"}, Verbs: ro},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: operators, Verbs: []string{"impersonate"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
	}
}

// Options configure Prepare.
type Options struct {
	Students int
	// Dir receives one kubeconfig per student, sN.kubeconfig.
	Dir string
	// TTL is how long the students' tokens last.
	TTL time.Duration
	// Server, if set, replaces the apiserver address in the students'
	// kubeconfigs (the instructor's may be a loopback address).
	Server string
	Log    io.Writer // progress, one line per student
	// Needs are the lessons allowed on a shared cluster, each with what it
	// holds at most in a namespace: the capacity plan reads them, and the
	// quota (QuotaFor) is sized from them. None: no plan, no quota.
	Needs []Need
	// DryRun prints the plan and the quota and changes nothing; Force
	// prepares a class the plan says does not fit.
	DryRun, Force bool
}

// clients are the instructor's.
type clients struct {
	cfg  *rest.Config
	kube kubernetes.Interface
	dyn  dynamic.Interface
	ext  apiextensionsclient.Interface
}

func newClients(cfg *rest.Config) (*clients, error) {
	// client-go's default limit, 5 requests a second, made prepare take 5 s
	// a student (about 30 requests each): 2.5 minutes for a class of 30.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	c := &clients{cfg: cfg}
	var err error
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if c.ext, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return c, nil
}

// Prepare installs the Echo CRD if it is missing (updates it if it is older
// than this rlab's), and makes each student's namespaces, identities and
// kubeconfig. Running it again adds what is missing and writes fresh tokens.
func Prepare(ctx context.Context, cfg *rest.Config, o Options) ([]string, error) {
	if o.Students < 1 {
		return nil, fmt.Errorf("--students %d: want at least 1", o.Students)
	}
	if o.TTL <= 0 {
		o.TTL = cluster.TokenTTL
	}
	c, err := newClients(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.plan(ctx, o); err != nil || o.DryRun {
		return nil, err
	}
	added, err := c.ensureCRD(ctx)
	if err != nil {
		return nil, err
	}
	if len(added) > 0 && o.Log != nil {
		fmt.Fprintf(o.Log, "updated the Echo CRD: added %s\n", strings.Join(added, ", "))
	}
	if _, err := c.namespace(ctx, tenancy.ClassroomNamespace, "classroom"); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("kubeconfig dir: %w", err)
	}
	var files []string
	for i := 1; i <= o.Students; i++ {
		name := Student(i)
		file, err := c.student(ctx, name, o)
		if err != nil {
			return files, fmt.Errorf("student %s: %w", name, err)
		}
		files = append(files, file)
		if o.Log != nil {
			fmt.Fprintf(o.Log, "%s: namespaces %s{%s}, kubeconfig %s\n", name, Prefix(name), strings.Join(styleNames(), ","), file)
		}
	}
	if len(o.Needs) > 0 {
		if err := c.quotasCounted(ctx, o.Students*len(style.All())); err != nil {
			return files, err
		}
	}
	return files, nil
}

func styleNames() []string {
	var out []string
	for _, st := range style.All() {
		out = append(out, st.Namespace())
	}
	return out
}

// ensureCRD installs the Echo CRD, labelled so that teardown removes it,
// unless one is there already: then it is kept, and updated if it lacks
// status properties this rlab's operators write (returned), its labels left
// as they are so that teardown still removes only what prepare installed.
func (c *clients) ensureCRD(ctx context.Context) (added []string, err error) {
	crd, err := echov1.CRD()
	if err != nil {
		return nil, err
	}
	if got, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{}); err == nil {
		added, err := cluster.UpgradeEchoCRD(ctx, c.ext, got)
		if err != nil {
			return nil, fmt.Errorf("echo crd: %w", err)
		}
		return added, nil
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("echo crd: %w", err)
	}
	if crd.Labels == nil {
		crd.Labels = map[string]string{}
	}
	crd.Labels[LabelClassroom] = "crd"
	if _, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("install echo crd: %w", err)
	}
	return nil, cluster.Poll(ctx, 30*time.Second, "the Echo CRD to be served", func(ctx context.Context) (bool, error) {
		_, err := c.dyn.Resource(echov1.Resource).Namespace(tenancy.ClassroomNamespace).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
}

// namespace creates ns labelled for owner, or checks that an existing ns is
// the classroom's (existed): prepare never takes over someone else's
// namespace.
func (c *clients) namespace(ctx context.Context, ns, owner string) (existed bool, err error) {
	labels := map[string]string{LabelClassroom: owner, tenancy.LabelManagedBy: tenancy.ManagedByRlab}
	_, err = c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, gerr := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if gerr != nil {
			return true, fmt.Errorf("namespace %s: %w", ns, gerr)
		}
		if got.Labels[LabelClassroom] != owner {
			return true, fmt.Errorf("namespace %s exists and is not the classroom's (no label %s=%s): remove it or pick other students", ns, LabelClassroom, owner)
		}
		if got.DeletionTimestamp != nil {
			return true, fmt.Errorf("namespace %s is still being deleted (a teardown?): try again in a minute", ns)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("namespace %s: %w", ns, err)
	}
	return false, nil
}

// student makes one student's identity, namespaces and kubeconfig.
func (c *clients) student(ctx context.Context, name string, o Options) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tenancy.ClassroomNamespace,
		Labels: map[string]string{LabelClassroom: name}}}
	if _, err := c.kube.CoreV1().ServiceAccounts(tenancy.ClassroomNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("service account: %w", err)
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: tenancy.ClassroomNamespace}
	p := Prefix(name)
	var kept []string // namespaces of an earlier prepare, and what is in them
	for _, st := range style.All() {
		ns := p.Namespace(st)
		existed, err := c.namespace(ctx, ns, name)
		if err != nil {
			return "", err
		}
		if existed {
			list, err := c.dyn.Resource(echov1.Resource).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return "", fmt.Errorf("echoes in %s: %w", ns, err)
			}
			kept = append(kept, fmt.Sprintf("%s (%d Echoes)", ns, len(list.Items)))
		}
		if err := c.role(ctx, ns, StudentRole, StudentRules(), subject); err != nil {
			return "", err
		}
		// The operators' identity, as a sandbox of its own would make it;
		// the student's rlab finds them and asks only for a token.
		osa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: st.Operator(), Namespace: ns}}
		if _, err := c.kube.CoreV1().ServiceAccounts(ns).Create(ctx, osa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("operator service account in %s: %w", ns, err)
		}
		op := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: st.Operator(), Namespace: ns}
		if err := c.role(ctx, ns, sandbox.RoleName, sandbox.OperatorRules(st), op); err != nil {
			return "", err
		}
		if len(o.Needs) > 0 {
			if err := c.quota(ctx, ns, name, QuotaFor(o.Needs)); err != nil {
				return "", err
			}
		}
	}
	if err := c.progressConfigMap(ctx, name, subject); err != nil {
		return "", err
	}
	if len(kept) > 0 && o.Log != nil {
		// Running prepare again is how tokens are renewed; for a new class,
		// start from nothing with teardown. Nothing is deleted here.
		fmt.Fprintf(o.Log, "%s: kept from an earlier prepare, as they are: %s (rlab classroom teardown first, for a new class)\n", name, strings.Join(kept, ", "))
	}
	return c.kubeconfig(ctx, name, p.Namespace(style.Shell), o)
}

// role creates (or resets) Role name with rules in ns, bound to subject.
func (c *clients) role(ctx context.Context, ns, name string, rules []rbacv1.PolicyRule, subject rbacv1.Subject) error {
	roles := c.kube.RbacV1().Roles(ns)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: rules}
	if _, err := roles.Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		got, gerr := roles.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("role %s/%s: %w", ns, name, gerr)
		}
		got.Rules = rules
		if _, err := roles.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("role %s/%s: %w", ns, name, err)
		}
	} else if err != nil {
		return fmt.Errorf("role %s/%s: %w", ns, name, err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := c.kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("rolebinding %s/%s: %w", ns, name, err)
	}
	return nil
}

// kubeconfig writes student name's kubeconfig: a token for their
// ServiceAccount, the cluster's address and CA, and nothing of the
// instructor's.
func (c *clients) kubeconfig(ctx context.Context, name, namespace string, o Options) (string, error) {
	ttl := int64(o.TTL / time.Second)
	tr, err := c.kube.CoreV1().ServiceAccounts(tenancy.ClassroomNamespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	ca := c.cfg.CAData
	if len(ca) == 0 && c.cfg.CAFile != "" {
		if ca, err = os.ReadFile(c.cfg.CAFile); err != nil {
			return "", fmt.Errorf("cluster CA: %w", err)
		}
	}
	server := c.cfg.Host
	if o.Server != "" {
		server = o.Server
	}
	ctxName := "rlab-" + name
	kc := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"rlab-classroom": {
			Server: server, CertificateAuthorityData: ca, InsecureSkipTLSVerify: len(ca) == 0 && c.cfg.Insecure,
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: tr.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{ctxName: {Cluster: "rlab-classroom", AuthInfo: name, Namespace: namespace}},
		CurrentContext: ctxName,
	}
	file := filepath.Join(o.Dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(kc, file); err != nil {
		return "", fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := os.Chmod(file, 0o600); err != nil {
		return "", fmt.Errorf("write kubeconfig: %w", err)
	}
	return file, nil
}

// Status writes one line per student and style: their Echoes with status,
// and who holds the style's Lease (and whether it is still renewed).
func Status(ctx context.Context, cfg *rest.Config, w io.Writer) error {
	c, err := newClients(cfg)
	if err != nil {
		return err
	}
	students, err := c.students(ctx)
	if err != nil {
		return err
	}
	if len(students) == 0 {
		fmt.Fprintln(w, "no classroom on this cluster: rlab classroom prepare --students N makes one")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STUDENT\tSTYLE\tECHOES\tLEADER")
	now := time.Now()
	for _, name := range students {
		for _, st := range style.All() {
			ns := Prefix(name).Namespace(st)
			list, err := c.dyn.Resource(echov1.Resource).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("echoes in %s: %w", ns, err)
			}
			var echoes []string
			for _, e := range list.Items {
				ready, _, _ := unstructured.NestedString(e.Object, "status", "ready")
				if ready == "" {
					ready = "-"
				}
				echoes = append(echoes, e.GetName()+" "+ready)
			}
			sort.Strings(echoes)
			if len(echoes) == 0 {
				echoes = []string{"none"}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, st, strings.Join(echoes, ", "), c.leader(ctx, ns, st, now))
		}
	}
	return tw.Flush()
}

// leader says who holds the Lease in ns, and whether it is renewed.
func (c *clients) leader(ctx context.Context, ns string, st style.Style, now time.Time) string {
	if !st.Traits().ElectsLeader {
		return "no election"
	}
	l, err := c.kube.CoordinationV1().Leases(ns).Get(ctx, echo.LeaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "no lease (operators not running)"
	}
	if err != nil {
		return "? " + err.Error()
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "nobody"
	}
	held := "held"
	if l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil &&
		now.Sub(l.Spec.RenewTime.Time) > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
		held = "expired: operators stopped?"
	}
	return *l.Spec.HolderIdentity + " (" + held + ")"
}

// students are the names of the classroom's ServiceAccounts, in order.
func (c *clients) students(ctx context.Context) ([]string, error) {
	list, err := c.kube.CoreV1().ServiceAccounts(tenancy.ClassroomNamespace).List(ctx, metav1.ListOptions{LabelSelector: LabelClassroom})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("students: %w", err)
	}
	var out []string
	if list != nil {
		for _, sa := range list.Items {
			out = append(out, sa.Name)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimPrefix(out[i], "s"))
		b, _ := strconv.Atoi(strings.TrimPrefix(out[j], "s"))
		return a < b
	})
	return out, nil
}

// Teardown removes everything prepare made: the students' namespaces (their
// Echoes released from finalizers first, with no operator left to run them),
// the classroom namespace, and the CRD if prepare installed it. It returns
// once they are gone.
func Teardown(ctx context.Context, cfg *rest.Config, w io.Writer) error {
	c, err := newClients(cfg)
	if err != nil {
		return err
	}
	list, err := c.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: LabelClassroom})
	if err != nil {
		return fmt.Errorf("classroom namespaces: %w", err)
	}
	var errs []error
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
		if err := tenancy.ReleaseEchoes(ctx, c.dyn, ns.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := c.kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete namespace %s: %w", ns.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(w, "deleting %d namespaces\n", len(names))
	if err := cluster.Poll(ctx, 3*time.Minute, "the classroom's namespaces to be deleted", func(ctx context.Context) (bool, error) {
		left, err := c.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: LabelClassroom})
		if err != nil {
			return false, err
		}
		return len(left.Items) == 0, nil
	}); err != nil {
		return err
	}
	crd, err := echov1.CRD()
	if err != nil {
		return err
	}
	got, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("echo crd: %w", err)
	case got.Labels[LabelClassroom] == "":
		fmt.Fprintf(w, "kept the Echo CRD: it was there before the classroom\n")
	default:
		crds := c.ext.ApiextensionsV1().CustomResourceDefinitions()
		if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete echo crd: %w", err)
		}
		// The apiserver removes the CRD once its objects are gone.
		if err := cluster.Poll(ctx, time.Minute, "the Echo CRD to be deleted", func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			return err
		}
		fmt.Fprintf(w, "deleted the Echo CRD\n")
	}
	fmt.Fprintf(w, "classroom removed: %s\n", strings.Join(names, " "))
	return nil
}
