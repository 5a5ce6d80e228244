package cluster

import (
	"context"
	"fmt"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
)

// CRDOutdated names the status properties of the embedded Echo CRD
// ("status.observedGeneration", ...) that got, the cluster's Echo CRD, lacks
// in its version of the Echo type: the apiserver prunes them from every
// write, so the operators' status would never stick.
func CRDOutdated(got *apiextensionsv1.CustomResourceDefinition) ([]string, error) {
	want, err := echov1.CRD()
	if err != nil {
		return nil, err
	}
	var have map[string]apiextensionsv1.JSONSchemaProps
	if s := statusSchema(got); s != nil {
		if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
			return nil, nil // prunes nothing
		}
		have = s.Properties
	}
	ws := statusSchema(want)
	if ws == nil {
		return nil, fmt.Errorf("the embedded Echo CRD has no status schema")
	}
	var missing []string
	for name := range ws.Properties {
		if _, ok := have[name]; !ok {
			missing = append(missing, "status."+name)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// statusSchema is the schema of status in crd's version of the Echo type,
// nil if it has none.
func statusSchema(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
	for _, v := range crd.Spec.Versions {
		if v.Name != echov1.GroupVersion.Version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		if s, ok := v.Schema.OpenAPIV3Schema.Properties["status"]; ok {
			return &s
		}
	}
	return nil
}

// UpgradeEchoCRD brings got, the cluster's Echo CRD, up to the embedded one
// if CRDOutdated finds it lacking: its versions are replaced, its metadata
// (labels, annotations, resourceVersion) kept, so that whoever installed it
// still owns it. It returns the status properties it added, none if got was
// up to date, once the CRD is Established again. An update the user may not
// make is an error that apierrors.IsForbidden recognises.
func UpgradeEchoCRD(ctx context.Context, cs apiextensionsclient.Interface, got *apiextensionsv1.CustomResourceDefinition) ([]string, error) {
	return upgradeEchoCRD(ctx, cs, got, Poll)
}

func upgradeEchoCRD(ctx context.Context, cs apiextensionsclient.Interface, got *apiextensionsv1.CustomResourceDefinition, poll pollFunc) ([]string, error) {
	missing, err := CRDOutdated(got)
	if err != nil || len(missing) == 0 {
		return nil, err
	}
	want, err := echov1.CRD()
	if err != nil {
		return nil, err
	}
	upd := got.DeepCopy()
	upd.Spec.Versions = want.Spec.Versions
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return missing, fmt.Errorf("update CRD %s: %w", got.Name, err)
	}
	if err := waitEstablished(ctx, cs, got.Name, poll); err != nil {
		return missing, err
	}
	return missing, nil
}
