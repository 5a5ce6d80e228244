package cluster

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TokenTTL is how long an operator's token lasts: longer than any workshop
// day, so a running sandbox never has to renew it.
const TokenTTL = 24 * time.Hour

// Identity is who an operator is to the apiserver, with no permissions of its
// own: RBAC bindings to Subject decide what it may do.
type Identity struct {
	Config  *rest.Config // authenticates as Subject
	Subject rbacv1.Subject
}

// Username is the name the apiserver knows the identity by, e.g.
// "system:serviceaccount:echo-shell:echo-shell-operator".
func (id *Identity) Username() string {
	return serviceaccount.MakeUsername(id.Subject.Namespace, id.Subject.Name)
}

// ServiceAccount creates (or reuses) ServiceAccount namespace/name and returns
// a client config carrying a token for it from the TokenRequest API. It works
// on every backend, as an operator's identity does on a real cluster: no
// client certificates, no access to the cluster's CA key. The namespace must
// exist.
func ServiceAccount(ctx context.Context, admin *rest.Config, namespace, name string) (*Identity, error) {
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	// Read first: in a classroom the account was prepared, and a student
	// may read it but not create one.
	sas := cs.CoreV1().ServiceAccounts(namespace)
	if _, err = sas.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
		if _, err = sas.Create(ctx, sa, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("service account %s/%s: %w", namespace, name, err)
	}
	ttl := int64(TokenTTL / time.Second)
	tr, err := sas.CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for service account %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tr.Status.Token
	cfg.QPS, cfg.Burst = 100, 200
	return &Identity{
		Config:  cfg,
		Subject: rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace},
	}, nil
}
