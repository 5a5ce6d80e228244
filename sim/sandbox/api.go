package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/poll"
)

// What the student asks the apiserver about its API (lesson 16): discovery,
// the schema, an Echo by its path, and a ValidatingAdmissionPolicy of their
// own.

// StudentAPI is the part of the engine that acts as the student on the API
// itself: discovery, the schema, RBAC reviews, admission (a policy, the
// webhook). It holds the student's clients, rlab's for the probes that
// wait for admission to take hold, and where the webhook is served.
type StudentAPI struct {
	hands     *clients
	youConfig *rest.Config
	admin     *clients
	sc        scope
	// webhook is where controller-runtime's replica a serves its
	// validating webhook, or nil, and noWebhook then says why.
	webhook   *webhookServer
	noWebhook error
}

// DiscoverEchoes asks the apiserver which resources it serves, as
// `kubectl api-resources` does (the aggregated discovery of /api and
// /apis), and returns the Echo's.
func (a *StudentAPI) DiscoverEchoes(ctx context.Context) (metav1.APIResource, error) {
	_, lists, err := a.hands.kube.Discovery().ServerGroupsAndResources()
	if err != nil {
		return metav1.APIResource{}, fmt.Errorf("discovery: %w", err)
	}
	for _, l := range lists {
		if l.GroupVersion != echov1.GroupVersion.String() {
			continue
		}
		for _, r := range l.APIResources {
			if r.Name == echov1.Plural {
				return r, nil
			}
		}
	}
	return metav1.APIResource{}, fmt.Errorf("discovery lists no %s in %s", echov1.Plural, echov1.GroupVersion)
}

// ExplainEchoes reads the OpenAPI schema of the Echo's group and version,
// as `kubectl explain echo.spec` does: the index /openapi/v3, then the
// group version's document.
func (a *StudentAPI) ExplainEchoes(ctx context.Context) ([]byte, error) {
	paths, err := a.hands.kube.Discovery().OpenAPIV3().Paths()
	if err != nil {
		return nil, fmt.Errorf("openapi index: %w", err)
	}
	gv, ok := paths["apis/"+echov1.GroupVersion.String()]
	if !ok {
		return nil, fmt.Errorf("the openapi index lists no apis/%s", echov1.GroupVersion)
	}
	b, err := gv.Schema("application/json")
	if err != nil {
		return nil, fmt.Errorf("openapi apis/%s: %w", echov1.GroupVersion, err)
	}
	return b, nil
}

// GetEcho reads Echo name in the style's namespace, as `kubectl get`
// (or `kubectl get --raw` of its path) does.
func (h *Student) GetEcho(ctx context.Context, only style.Style, name string) error {
	return h.sc.forStyles(only, func(st style.Style) error {
		_, err := h.Echoes(st).Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// PolicyName names lesson 16's ValidatingAdmissionPolicy and its binding.
const PolicyName = "echo-max-replicas"

// Policy is lesson 16's ValidatingAdmissionPolicy, that an Echo ask for
// at most max replicas, and its binding, which denies what it refuses in
// namespaces (the built-in styles'): lesson 16's YAML, in Go.
func Policy(max int, namespaces []string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{echov1.Group}, APIVersions: []string{echov1.Version}, Resources: []string{echov1.Plural},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("object.spec.replicas <= %d", max),
				Message:    fmt.Sprintf("an Echo here may ask for %d replicas at most", max),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        PolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: namespaces,
				}}},
			},
		},
	}
	return policy, binding
}

// ApplyPolicy creates lesson 16's policy and binding (Policy), or updates
// them, as the student's `kubectl apply` does, and waits (a bounded while)
// until the apiserver enforces them: its admission plugin learns of a new
// binding through an informer, a moment later. The wait asks with a dry
// run, as rlab: an Echo asking for one replica more than max must be
// refused.
func (a *StudentAPI) ApplyPolicy(ctx context.Context, max int) error {
	var namespaces []string
	for _, st := range style.All() {
		namespaces = append(namespaces, a.sc.namespace(st))
	}
	policy, binding := Policy(max, namespaces)
	api := a.hands.kube.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); apierrors.IsAlreadyExists(err) {
		err = updatePolicy(ctx, a.hands, policy)
		if err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("create ValidatingAdmissionPolicy %s: %w", PolicyName, err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); apierrors.IsAlreadyExists(err) {
		got, err := api.ValidatingAdmissionPolicyBindings().Get(ctx, PolicyName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("ValidatingAdmissionPolicyBinding %s: %w", PolicyName, err)
		}
		got.Spec = binding.Spec
		if _, err := api.ValidatingAdmissionPolicyBindings().Update(ctx, got, metav1.UpdateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
			return fmt.Errorf("update ValidatingAdmissionPolicyBinding %s: %w", PolicyName, err)
		}
	} else if err != nil {
		return fmt.Errorf("create ValidatingAdmissionPolicyBinding %s: %w", PolicyName, err)
	}
	if max >= echov1.MaxReplicas {
		return nil // the schema refuses more before any policy is asked
	}
	return a.awaitPolicy(ctx, max)
}

func updatePolicy(ctx context.Context, c *clients, policy *admissionregistrationv1.ValidatingAdmissionPolicy) error {
	api := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	got, err := api.Get(ctx, PolicyName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("ValidatingAdmissionPolicy %s: %w", PolicyName, err)
	}
	got.Spec = policy.Spec
	if _, err := api.Update(ctx, got, metav1.UpdateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		return fmt.Errorf("update ValidatingAdmissionPolicy %s: %w", PolicyName, err)
	}
	return nil
}

// DeletePolicy deletes lesson 16's binding and policy, as the student's
// `kubectl delete` does; one already gone is an error, as it is there.
func (a *StudentAPI) DeletePolicy(ctx context.Context) error {
	return deletePolicy(ctx, a.hands, false)
}

// DeletePolicy deletes lesson 16's binding and policy if they are there,
// as rlab, after a lesson that stopped half-way. On a shared cluster it
// does nothing: a policy is cluster-wide, lesson 16 does not run there, and
// one of that name is someone else's (a student may not even delete it).
func (a *Admin) DeletePolicy(ctx context.Context) error {
	if a.shared {
		return nil
	}
	return deletePolicy(ctx, a.admin, true)
}

func deletePolicy(ctx context.Context, c *clients, gone bool) error {
	api := c.kube.AdmissionregistrationV1()
	errs := []error{
		api.ValidatingAdmissionPolicyBindings().Delete(ctx, PolicyName, metav1.DeleteOptions{}),
		api.ValidatingAdmissionPolicies().Delete(ctx, PolicyName, metav1.DeleteOptions{}),
	}
	if gone {
		errs = slices.DeleteFunc(errs, apierrors.IsNotFound)
	}
	return errors.Join(errs...)
}

// awaitPolicy waits until a dry-run edit of the sample Echo to max+1
// replicas is refused, as rlab.
func (a *StudentAPI) awaitPolicy(ctx context.Context, max int) error {
	st := a.sc.styles[0]
	patch := mustJSON(map[string]any{"spec": map[string]any{"replicas": max + 1}})
	what := fmt.Sprintf("the apiserver to enforce ValidatingAdmissionPolicy %s", PolicyName)
	return poll.Until(ctx, 100*time.Millisecond, 30*time.Second, what, func(ctx context.Context) (bool, error) {
		_, err := a.sc.echoes(a.admin, st).Patch(ctx, SampleName, types.MergePatchType, patch,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || apierrors.IsInvalid(err) {
			return err != nil, nil
		}
		return false, err
	})
}

// ReviewRules asks, as the student through their proxy, what st's
// ServiceAccount may do in its namespace, the way `kubectl auth can-i
// --list --as=system:serviceaccount:NS:NAME` does: a SelfSubjectRulesReview
// impersonating it.
func (a *StudentAPI) ReviewRules(ctx context.Context, st style.Style) (*authorizationv1.SubjectRulesReviewStatus, error) {
	cfg := rest.CopyConfig(a.youConfig)
	cfg.UserAgent = "rlab"
	cfg.Impersonate.UserName = serviceaccount.MakeUsername(a.sc.namespace(st), st.Operator())
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	r, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: a.sc.namespace(st)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("rules of %s: %w", cfg.Impersonate.UserName, err)
	}
	return &r.Status, nil
}
