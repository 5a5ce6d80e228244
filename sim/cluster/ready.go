package cluster

import (
	"context"
	"fmt"
	"github.com/kkloud/rlab/sim/poll"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
)

// pollFunc waits for cond, naming what it waits for in its error.
type pollFunc func(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error

// waitUntil calls cond every 25 ms until it is true, ctx ends, timeout passes or
// alive (if set) reports that something the wait depends on has died.
func waitUntil(ctx context.Context, timeout time.Duration, what string, alive func() error, cond func(context.Context) (bool, error)) error {
	return pollEvery(ctx, 25*time.Millisecond, timeout, what, alive, cond)
}

// pollEvery is waitUntil with its interval.
func pollEvery(ctx context.Context, every, timeout time.Duration, what string, alive func() error, cond func(context.Context) (bool, error)) error {
	return poll.Until(ctx, every, timeout, what, func(ctx context.Context) (bool, error) {
		if alive != nil {
			if err := alive(); err != nil {
				return false, poll.Final(err)
			}
		}
		return cond(ctx)
	})
}

// installEchoCRD creates the Echo CRD and waits until the apiserver serves it
// and reports it Established.
func installEchoCRD(ctx context.Context, cfg *rest.Config, poll pollFunc) error {
	return installEchoCRDMarked(ctx, cfg, poll, func(string) {})
}

// installEchoCRDMarked is installEchoCRD, telling mark when the CRD is
// created, Established and served in discovery. It uses the typed
// apiextensions client, which needs no discovery: envtest.InstallCRDs'
// controller-runtime client maps the kind through discovery first, and
// right after the apiserver began to serve, that took 5 s about one start
// in six.
func installEchoCRDMarked(ctx context.Context, cfg *rest.Config, poll pollFunc, mark func(string)) error {
	crd, err := echov1.CRD()
	if err != nil {
		return err
	}
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	crds := cs.ApiextensionsV1().CustomResourceDefinitions()
	if err := applyCRD(ctx, crds, crd); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	mark("Echo CRD created")
	if err := waitEstablished(ctx, cs, crd.Name, poll); err != nil {
		return err
	}
	mark("Echo CRD established")
	// And in discovery, where the operators' clients look it up.
	gv := echov1.GroupVersion.String()
	err = poll(ctx, 30*time.Second, "Echo CRD in discovery", func(context.Context) (bool, error) {
		list, err := cs.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			return false, err
		}
		for _, r := range list.APIResources {
			if r.Name == echov1.Resource.Resource {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	mark("Echo CRD served (in discovery)")
	// And listed: for about a second after it is established, a list of
	// a new CRD's objects can fail, and an informer started then (the
	// world's) waits out its reflector's backoff before it tries again.
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	var last error
	err = poll(ctx, 30*time.Second, "Echo CRD listed", func(ctx context.Context) (bool, error) {
		_, last = dyn.Resource(echov1.Resource).List(ctx, metav1.ListOptions{Limit: 1})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	mark("Echo CRD listed")
	return nil
}

// waitEstablished waits until the apiserver reports CRD name Established.
func waitEstablished(ctx context.Context, cs apiextensionsclient.Interface, name string, poll pollFunc) error {
	var refused string
	err := poll(ctx, 30*time.Second, "CRD "+name+" Established", func(ctx context.Context) (bool, error) {
		got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse {
				refused = c.Message
			}
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil && refused != "" {
		return fmt.Errorf("%w: its names were not accepted: %s", err, refused)
	}
	return err
}

// NodeReady is true when n reports Ready and carries no not-ready or
// unreachable taint, i.e. the scheduler will place Pods on it.
func NodeReady(n *corev1.Node) bool {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	return ready
}

// Poll calls cond every 25 ms until it is true, ctx ends or timeout passes;
// its error names what it waited for, and cond's last error.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	return waitUntil(ctx, timeout, what, nil, cond)
}
