package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/operators/echo"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/tenancy"
)

// On a shared cluster (backend.Kubeconfig) the sandbox cleans up after itself
// one object at a time, and touches nothing outside its prefix: namespaces it
// created carry tenancy.OwnedLabels and are deleted whole; namespaces someone
// prepared for it (a classroom) are only emptied of what rlab and its
// operators make.

// cleanupWait bounds each wait for the cluster to finish a removal.
const cleanupWait = 90 * time.Second

// removeLeftovers removes what a killed run with the same prefix left: its
// namespaces (found by label, where the user may list namespaces) and the
// contents of prepared ones. It returns once they are gone, since a
// namespace still terminating refuses new objects.
func (c *Cluster) removeLeftovers(ctx context.Context) error {
	var gone []string
	list, err := c.admin.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{
		LabelSelector: tenancy.LabelPrefix + "=" + c.sc.prefix.Label(),
	})
	switch {
	case apierrors.IsForbidden(err):
		// A student: namespaces are prepared, never rlab's to delete.
	case err != nil:
		return fmt.Errorf("namespaces of prefix %s: %w", c.sc.prefix, err)
	default:
		for _, ns := range list.Items {
			c.log.Warn("removing a namespace left by a previous run", "namespace", ns.Name)
			if err := c.deleteNamespace(ctx, ns.Name); err != nil {
				return err
			}
			gone = append(gone, ns.Name)
		}
	}
	if len(gone) > 0 && c.note != nil {
		c.note(fmt.Sprintf("removed namespaces %v left by a previous run", gone))
	}
	var borrowed []string
	for _, st := range c.sc.styles {
		if ns := c.sc.namespace(st); !slices.Contains(gone, ns) {
			borrowed = append(borrowed, ns)
		}
	}
	if err := c.empty(ctx, borrowed); err != nil {
		return err
	}
	return c.waitGone(ctx, gone)
}

// removeOwn is Stop's cleanup: the namespaces this run created are deleted,
// prepared ones emptied. It waits (bounded) so that a quit means gone.
func (c *Cluster) removeOwn() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*cleanupWait)
	defer cancel()
	var errs, borrowed []string
	for _, st := range c.sc.styles {
		ns := c.sc.namespace(st)
		if !slices.Contains(c.owned, ns) {
			borrowed = append(borrowed, ns)
			continue
		}
		if err := c.deleteNamespace(ctx, ns); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if err := c.empty(ctx, borrowed); err != nil {
		errs = append(errs, err.Error())
	}
	if err := c.waitGone(ctx, c.owned); err != nil {
		errs = append(errs, err.Error())
	}
	c.owned = nil
	if len(errs) > 0 {
		return fmt.Errorf("clean up the shared cluster: %v", errs)
	}
	return nil
}

// deleteNamespace deletes ns after releasing its Echoes: with no operator
// left to run their finalizers, they would keep the namespace terminating.
func (c *Cluster) deleteNamespace(ctx context.Context, ns string) error {
	if err := tenancy.ReleaseEchoes(ctx, c.admin.dyn, ns); err != nil {
		return err
	}
	err := c.admin.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	return nil
}

// empty removes from prepared namespaces what the sandbox and its
// operators make: Echoes (their Deployments go by garbage collection),
// Deployments orphaned on purpose, the finalizer registry and the Lease. It
// waits until the Echoes, Deployments and Pods are gone.
func (c *Cluster) empty(ctx context.Context, namespaces []string) error {
	var errs []error
	ignore := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	for _, ns := range namespaces {
		if err := tenancy.ReleaseEchoes(ctx, c.admin.dyn, ns); err != nil {
			errs = append(errs, err)
			continue
		}
		echoes := c.admin.dyn.Resource(echov1.Resource).Namespace(ns)
		list, err := echoes.List(ctx, metav1.ListOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("echoes in %s: %w", ns, err))
			continue
		}
		for _, e := range list.Items {
			errs = append(errs, ignore(echoes.Delete(ctx, e.GetName(), del)))
		}
		deps := c.admin.kube.AppsV1().Deployments(ns)
		dl, err := deps.List(ctx, metav1.ListOptions{LabelSelector: echo.LabelKey})
		if err != nil {
			errs = append(errs, fmt.Errorf("deployments in %s: %w", ns, err))
			continue
		}
		for _, d := range dl.Items {
			errs = append(errs, ignore(deps.Delete(ctx, d.Name, del)))
		}
		errs = append(errs,
			ignore(c.admin.kube.CoreV1().ConfigMaps(ns).Delete(ctx, echo.RegistryName, metav1.DeleteOptions{})),
			ignore(c.admin.kube.CoordinationV1().Leases(ns).Delete(ctx, echo.LeaseName, metav1.DeleteOptions{})))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("empty namespaces %v: %w", namespaces, err)
	}
	return cluster.Poll(ctx, cleanupWait, fmt.Sprintf("Echoes, Deployments and Pods in %v to go", namespaces), func(ctx context.Context) (bool, error) {
		for _, ns := range namespaces {
			el, err := c.admin.dyn.Resource(echov1.Resource).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			dl, err := c.admin.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: echo.LabelKey})
			if err != nil {
				return false, err
			}
			pl, err := c.admin.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: echo.LabelKey})
			if err != nil {
				return false, err
			}
			if len(el.Items)+len(dl.Items)+len(pl.Items) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitGone returns once every namespace in nss is gone.
func (c *Cluster) waitGone(ctx context.Context, nss []string) error {
	if len(nss) == 0 {
		return nil
	}
	return cluster.Poll(ctx, cleanupWait, fmt.Sprintf("namespaces %v to be deleted", nss), func(ctx context.Context) (bool, error) {
		for _, ns := range nss {
			_, err := c.admin.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
}
