// Package tenancy says who owns what on a cluster shared with others: the
// namespace prefix a sandbox or student works under, the labels that mark
// what rlab created there, and how such namespaces are let go. Starting,
// stopping and connecting to clusters is package cluster's.
package tenancy

import (
	"context"
	"fmt"
	"os/user"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/style"
)

// Labels rlab puts on the namespaces it creates on a shared cluster, so that
// a later start (or `rlab classroom teardown`) finds them, and nothing else.
const (
	// LabelPrefix holds the sandbox's namespace prefix (Prefix.Label).
	LabelPrefix = "rlab.kkloud.io/prefix"
	// LabelManagedBy is app.kubernetes.io/managed-by=rlab.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByRlab  = "rlab"
)

// ClassroomNamespace holds the students' ServiceAccounts that
// `rlab classroom prepare` makes; a student is known by theirs.
const ClassroomNamespace = "rlab-classroom"

// DefaultPrefix is the namespace prefix of a user who gave none: a classroom
// student's is their student name ("rlab-s1-", as prepared), anyone else's
// comes from their login on this machine, since several people often share
// one admin kubeconfig.
func DefaultPrefix(k8sUser string) style.Prefix {
	if rest, ok := strings.CutPrefix(k8sUser, "system:serviceaccount:"+ClassroomNamespace+":"); ok {
		return style.UserPrefix(rest)
	}
	name := "user"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	return style.UserPrefix(name)
}

// OwnedLabels mark a namespace that a sandbox with prefix p created.
func OwnedLabels(p style.Prefix) map[string]string {
	return map[string]string{LabelPrefix: p.Label(), LabelManagedBy: ManagedByRlab}
}

// ReleaseEchoes removes the finalizers from every Echo in ns. Whoever
// deletes a namespace with no operator left to run them must: they would keep
// the namespace terminating forever.
func ReleaseEchoes(ctx context.Context, dyn dynamic.Interface, ns string) error {
	echoes := dyn.Resource(echov1.Resource).Namespace(ns)
	list, err := echoes.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("echoes in %s: %w", ns, err)
	}
	for _, e := range list.Items {
		if len(e.GetFinalizers()) == 0 {
			continue
		}
		_, err := echoes.Patch(ctx, e.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("release echo %s/%s: %w", ns, e.GetName(), err)
		}
	}
	return nil
}
