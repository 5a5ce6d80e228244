package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// applyCRD creates crd, or updates the one of its name.
func applyCRD(ctx context.Context, api apiextensionsv1client.CustomResourceDefinitionInterface, crd *apiextensionsv1.CustomResourceDefinition) error {
	crd.ResourceVersion = ""
	if _, err := api.Create(ctx, crd, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			cur, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			crd.ResourceVersion = cur.ResourceVersion
			_, err = api.Update(ctx, crd, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("update CRD %s: %w", crd.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("create CRD %s: %w", crd.Name, err)
	}
	return nil
}

// installCRDs creates (or updates) crds, a project's own, and waits until
// each is Established, served in discovery under every served version and
// listed, so that a garbage collector started next discovers them and a
// client started next finds them.
func installCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition, poll pollFunc) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, c := range crds {
		if err := applyCRD(ctx, api, c.DeepCopy()); err != nil {
			return err
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, cs, crd.Name, poll); err != nil {
			return fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
			gvr := gv.WithResource(crd.Spec.Names.Plural)
			var last error
			err := poll(ctx, 30*time.Second, "CRD "+crd.Name+" served and listed", func(ctx context.Context) (bool, error) {
				list, err := cs.Discovery().ServerResourcesForGroupVersion(gv.String())
				if err != nil {
					last = err
					return false, nil
				}
				found := false
				for _, r := range list.APIResources {
					found = found || r.Name == gvr.Resource
				}
				if !found {
					last = errors.New("not in discovery yet")
					return false, nil
				}
				_, last = dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
				return last == nil, nil
			})
			if err != nil {
				return fmt.Errorf("%w (last: %v)", err, last)
			}
		}
	}
	return nil
}
