package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
)

func echoSaying(ns, name, message string) *echov1.Echo {
	return &echov1.Echo{
		TypeMeta:   metav1.TypeMeta{APIVersion: echov1.GroupVersion.String(), Kind: echov1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       echov1.EchoSpec{Message: message, Replicas: ptr.To[int32](1)},
	}
}

// TestUniqueMessage runs the webhook's handler as controller-runtime's
// builder wires it (admission.WithValidator) on AdmissionReviews the
// apiserver would send, over a cache holding hello and a default-message
// Echo.
func TestUniqueMessage(t *testing.T) {
	scheme := k8sruntime.NewScheme()
	if err := echov1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	const ns = "echo-runtime"
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		echoSaying(ns, "hello", "hello from rlab"),
		echoSaying(ns, "quiet", ""),
		echoSaying("echo-shell", "elsewhere", "said elsewhere"),
		// Two that share a message: made at the same instant, or before
		// the webhook.
		echoSaying(ns, "twin-a", "twins"),
		echoSaying(ns, "twin-b", "twins"),
	).Build()
	wh := admission.WithValidator(scheme, &UniqueMessage{Reader: cache, Namespace: ns})

	raw := func(e *echov1.Echo) k8sruntime.RawExtension {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return k8sruntime.RawExtension{Raw: b}
	}
	for _, tc := range []struct {
		name    string
		op      admissionv1.Operation
		obj     *echov1.Echo
		allowed bool
		message string // in the denial
		old     string // an update's old message ("before" if "")
	}{
		{"create repeating hello", admissionv1.Create, echoSaying(ns, "copycat", "hello from rlab"), false,
			`Echo hello already says "hello from rlab" in echo-runtime: an Echo's message must be unique in its namespace`, ""},
		{"create with its own message", admissionv1.Create, echoSaying(ns, "copycat", "a copy of no one"), true, "", ""},
		{"create with the default message", admissionv1.Create, echoSaying(ns, "copycat", ""), true, "", ""},
		{"create saying what another namespace says", admissionv1.Create, echoSaying(ns, "copycat", "said elsewhere"), true, "", ""},
		{"update of hello itself", admissionv1.Update, echoSaying(ns, "hello", "hello from rlab"), true, "", ""},
		{"update to hello's message", admissionv1.Update, echoSaying(ns, "quiet", "hello from rlab"), false, "Echo hello already says", ""},
		// The message kept: a scale, a label, the operator's finalizer.
		{"update of a twin that keeps its message", admissionv1.Update, echoSaying(ns, "twin-a", "twins"), true, "", "twins"},
		{"update of a twin being deleted", admissionv1.Update, deleting(echoSaying(ns, "twin-b", "twins")), true, "", "twins"},
		{"update of a twin to the other's message", admissionv1.Update, echoSaying(ns, "twin-a", "twins"), false, "Echo twin-b already says", "before"},
		{"delete", admissionv1.Delete, echoSaying(ns, "hello", "hello from rlab"), true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Operation: tc.op, Namespace: ns, Name: tc.obj.Name,
				Kind: metav1.GroupVersionKind{Group: echov1.Group, Version: echov1.Version, Kind: echov1.Kind},
			}}
			switch tc.op {
			case admissionv1.Delete:
				req.OldObject = raw(tc.obj)
			case admissionv1.Update:
				old := tc.old
				if old == "" {
					old = "before"
				}
				req.Object, req.OldObject = raw(tc.obj), raw(echoSaying(ns, tc.obj.Name, old))
			default:
				req.Object = raw(tc.obj)
			}
			resp := wh.Handle(context.Background(), req)
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed %t, want %t (result %+v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if tc.allowed {
				return
			}
			// The apiserver passes the code on, and prefixes the message
			// with `admission webhook "NAME" denied the request: `.
			if resp.Result == nil || resp.Result.Code != http.StatusForbidden || !strings.Contains(resp.Result.Message, tc.message) {
				t.Fatalf("result %+v, want 403 saying %q", resp.Result, tc.message)
			}
		})
	}
}

// TestWebhookPath: echov1.WebhookPath, which the sandbox puts in the configuration's
// URL, is where controller-runtime's builder serves a validator of the Echo
// (pkg/builder: /validate-<group, dots as dashes>-<version>-<kind, lower case>).
func TestWebhookPath(t *testing.T) {
	want := "/validate-" + strings.ReplaceAll(echov1.Group, ".", "-") + "-" + echov1.Version + "-" + strings.ToLower(echov1.Kind)
	if echov1.WebhookPath != want {
		t.Fatalf("WebhookPath %s, want %s", echov1.WebhookPath, want)
	}
}

// deleting is e marked for deletion, as a delete held by a finalizer
// leaves it.
func deleting(e *echov1.Echo) *echov1.Echo {
	now := metav1.Now()
	e.DeletionTimestamp = &now
	e.Finalizers = []string{"kkloud.io/echo-registry"}
	return e
}
