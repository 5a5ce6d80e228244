package runtime

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
)

// UniqueMessage is the operator's validating webhook for Echoes (lesson
// 19): an Echo's message must be unique in its namespace. The CRD's CEL
// rules see one object; a ValidatingAdmissionPolicy sees others only as
// params, one at a time (paramRef with a selector), with no way to count or
// aggregate; the webhook reads the others from the operator's cache.
type UniqueMessage struct {
	// Reader is the manager's client: its reads come from the cache, which
	// holds the operator's namespace only.
	Reader    client.Reader
	Namespace string
}

var _ admission.Validator[*echov1.Echo] = (*UniqueMessage)(nil)

// ValidateCreate refuses an Echo whose message another Echo already says.
func (u *UniqueMessage) ValidateCreate(ctx context.Context, e *echov1.Echo) (admission.Warnings, error) {
	return nil, u.check(ctx, e)
}

// ValidateUpdate refuses an edit that gives an Echo another's message, and
// nothing else: an update that keeps the message (a scale, a label, the
// operator's own finalizer) passes even if another Echo shares it (two
// made at the same instant, or before the webhook), and so does every
// update of an Echo being deleted, whose finalizer must be able to go.
func (u *UniqueMessage) ValidateUpdate(ctx context.Context, old, e *echov1.Echo) (admission.Warnings, error) {
	if e.DeletionTimestamp != nil || old.Spec.Message == e.Spec.Message {
		return nil, nil
	}
	return nil, u.check(ctx, e)
}

// ValidateDelete lets every deletion through.
func (u *UniqueMessage) ValidateDelete(context.Context, *echov1.Echo) (admission.Warnings, error) {
	return nil, nil
}

// check is the rule. An empty message is the namespace's default
// (echo-defaults), which any number of Echoes may share. The cache may
// lag the apiserver: two Echoes created at the same instant can both pass.
func (u *UniqueMessage) check(ctx context.Context, e *echov1.Echo) error {
	if e.Spec.Message == "" || e.Namespace != u.Namespace {
		return nil // only the namespace the cache holds is checked
	}
	var all echov1.EchoList
	if err := u.Reader.List(ctx, &all, client.InNamespace(u.Namespace)); err != nil {
		return fmt.Errorf("list the Echoes of %s: %w", u.Namespace, err)
	}
	for _, o := range all.Items {
		if o.Name != e.Name && o.Spec.Message == e.Spec.Message {
			return fmt.Errorf("Echo %s already says %q in %s: an Echo's message must be unique in its namespace", o.Name, o.Spec.Message, u.Namespace)
		}
	}
	return nil
}
