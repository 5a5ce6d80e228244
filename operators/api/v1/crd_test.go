package v1

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jsonFields lists a struct's JSON field names and which of them are required
// (no omitempty), the way controller-gen would read them.
func jsonFields(t reflect.Type) (names, required []string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			continue
		}
		names = append(names, name)
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	slices.Sort(names)
	slices.Sort(required)
	return names, required
}

func schemaFields(p apiextensionsv1.JSONSchemaProps) (names, required []string) {
	for name := range p.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	required = slices.Clone(p.Required)
	slices.Sort(required)
	return names, required
}

// TestCRDMatchesTypes keeps crd.yaml and types.go from drifting apart.
func TestCRDMatchesTypes(t *testing.T) {
	crd, err := CRD()
	if err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Group != Group || crd.Name != Plural+"."+Group {
		t.Fatalf("group/name = %q/%q", crd.Spec.Group, crd.Name)
	}
	n := crd.Spec.Names
	if n.Kind != Kind || n.Plural != Plural || n.Singular != Singular || !slices.Equal(n.ShortNames, []string{Short}) {
		t.Fatalf("names = %+v", n)
	}
	if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Fatalf("scope = %q", crd.Spec.Scope)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("want one version, got %d", len(crd.Spec.Versions))
	}
	v := crd.Spec.Versions[0]
	if v.Name != Version || !v.Served || !v.Storage || v.Subresources == nil || v.Subresources.Status == nil {
		t.Fatalf("version %q served=%v storage=%v subresources=%+v", v.Name, v.Served, v.Storage, v.Subresources)
	}
	var cols []string
	for _, c := range v.AdditionalPrinterColumns {
		cols = append(cols, c.Name+"="+c.JSONPath)
	}
	if want := []string{"MESSAGE=.spec.message", "REPLICAS=.spec.replicas", "READY=.status.ready"}; !slices.Equal(cols, want) {
		t.Fatalf("printer columns = %v, want %v", cols, want)
	}

	root := v.Schema.OpenAPIV3Schema.Properties
	tests := []struct {
		name   string
		schema apiextensionsv1.JSONSchemaProps
		typ    reflect.Type
	}{
		{"spec", root["spec"], reflect.TypeFor[EchoSpec]()},
		{"status", root["status"], reflect.TypeFor[EchoStatus]()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotNames, gotReq := schemaFields(tc.schema)
			wantNames, wantReq := jsonFields(tc.typ)
			if !slices.Equal(gotNames, wantNames) {
				t.Errorf("schema properties %v, Go fields %v", gotNames, wantNames)
			}
			if !slices.Equal(gotReq, wantReq) {
				t.Errorf("schema required %v, Go required (no omitempty) %v", gotReq, wantReq)
			}
			for f := range tc.typ.Fields() {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				want := map[reflect.Kind]string{reflect.String: "string", reflect.Int32: "integer", reflect.Int64: "integer", reflect.Slice: "array"}[f.Type.Kind()]
				if got := tc.schema.Properties[name].Type; got != want {
					t.Errorf("%s.%s: schema type %q, Go kind %s", tc.name, name, got, f.Type.Kind())
				}
			}
		})
	}

	// Conditions are metav1.Condition, merged by type: one of each.
	conds := root["status"].Properties["conditions"]
	if conds.XListType == nil || *conds.XListType != "map" || !slices.Equal(conds.XListMapKeys, []string{"type"}) {
		t.Fatalf("status.conditions list type %v keys %v, want a map keyed by type", conds.XListType, conds.XListMapKeys)
	}
	gotNames, gotReq := schemaFields(*conds.Items.Schema)
	wantNames, wantReq := jsonFields(reflect.TypeFor[metav1.Condition]())
	if !slices.Equal(gotNames, wantNames) || !slices.Equal(gotReq, wantReq) {
		t.Fatalf("status.conditions items: schema %v required %v, metav1.Condition %v required %v", gotNames, gotReq, wantNames, wantReq)
	}

	r := root["spec"].Properties["replicas"]
	if r.Minimum == nil || *r.Minimum != MinReplicas || r.Maximum == nil || *r.Maximum != MaxReplicas || r.Default == nil || string(r.Default.Raw) != "1" {
		t.Fatalf("replicas bounds/default wrong: %+v", r)
	}
}

// TestNewEcho: what NewEcho builds is what the dynamic client needs.
func TestNewEcho(t *testing.T) {
	u, err := NewEcho("ns", "hello", "hi", 2).ToUnstructured()
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "kkloud.io/v1" || u.GetKind() != Kind || u.GetNamespace() != "ns" || u.GetName() != "hello" {
		t.Fatalf("object %s %s %s/%s", u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName())
	}
	spec, _ := u.Object["spec"].(map[string]any)
	if spec["message"] != "hi" || spec["replicas"] != int64(2) {
		t.Fatalf("spec %v", spec)
	}
}
