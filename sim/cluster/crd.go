package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
)

// CRDOutdated names what got, the cluster's Echo CRD, lacks of the embedded
// one in its version of the Echo type: status properties
// ("status.observedGeneration", ...), which the apiserver prunes from every
// write, so the operators' status would never stick; then the spec's CEL
// rules (`spec rule "self.message..."`), without which an Echo lesson 16
// shows refused would be accepted; then a lower bound on spec.replicas
// ("spec.replicas minimum 0"), without which lesson 11's Echoes scaled to
// zero are refused.
func CRDOutdated(got *apiextensionsv1.CustomResourceDefinition) ([]string, error) {
	want, err := echov1.CRD()
	if err != nil {
		return nil, err
	}
	ws := propSchema(want, "status")
	if ws == nil {
		return nil, fmt.Errorf("the embedded Echo CRD has no status schema")
	}
	var missing []string
	// A status that keeps unknown fields prunes nothing.
	if s := propSchema(got, "status"); s == nil || s.XPreserveUnknownFields == nil || !*s.XPreserveUnknownFields {
		var have map[string]apiextensionsv1.JSONSchemaProps
		if s != nil {
			have = s.Properties
		}
		for name := range ws.Properties {
			if _, ok := have[name]; !ok {
				missing = append(missing, "status."+name)
			}
		}
	}
	sort.Strings(missing)
	var rules []string
	if s := propSchema(got, "spec"); s != nil {
		for _, r := range s.XValidations {
			rules = append(rules, r.Rule)
		}
	}
	if ws := propSchema(want, "spec"); ws != nil {
		for _, r := range ws.XValidations {
			if !slices.Contains(rules, r.Rule) {
				missing = append(missing, fmt.Sprintf("spec rule %q", r.Rule))
			}
		}
		wm := ws.Properties["replicas"].Minimum
		var gm *float64
		if s := propSchema(got, "spec"); s != nil {
			gm = s.Properties["replicas"].Minimum
		}
		if wm != nil && gm != nil && *gm > *wm {
			missing = append(missing, fmt.Sprintf("spec.replicas minimum %g", *wm))
		}
	}
	return missing, nil
}

// StatusMissing says whether what CRDOutdated found missing includes a
// status property: without one, no status the operators write sticks;
// without a rule, only what lesson 16 shows is lost.
func StatusMissing(missing []string) bool {
	return slices.ContainsFunc(missing, func(m string) bool { return strings.HasPrefix(m, "status.") })
}

// propSchema is the schema of the top-level property name (spec, status) in
// crd's version of the Echo type, nil if it has none.
func propSchema(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.JSONSchemaProps {
	for _, v := range crd.Spec.Versions {
		if v.Name != echov1.GroupVersion.Version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		if s, ok := v.Schema.OpenAPIV3Schema.Properties[name]; ok {
			return &s
		}
	}
	return nil
}

// UpgradeEchoCRD brings got, the cluster's Echo CRD, up to the embedded one
// if CRDOutdated finds it lacking: its versions are replaced, its metadata
// (labels, annotations, resourceVersion) kept, so that whoever installed it
// still owns it. It returns what it added, none if got was
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
