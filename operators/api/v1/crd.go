package v1

import (
	_ "embed"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// CRDYAML is the Echo CustomResourceDefinition as applied to the cluster; it is
// the same file students apply with kubectl (crd.yaml beside this file).
//
//go:embed crd.yaml
var CRDYAML []byte

// CRD decodes CRDYAML; every call returns a fresh object the caller may change.
func CRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(CRDYAML, crd); err != nil {
		return nil, fmt.Errorf("decode embedded Echo CRD: %w", err)
	}
	return crd, nil
}
