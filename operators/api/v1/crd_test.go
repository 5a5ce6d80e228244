package v1

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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
				typ := f.Type
				if typ.Kind() == reflect.Pointer { // optional, with a zero of its own
					typ = typ.Elem()
				}
				want := map[reflect.Kind]string{reflect.String: "string", reflect.Int32: "integer", reflect.Int64: "integer", reflect.Slice: "array"}[typ.Kind()]
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

// TestCRDRulesMatchMarkers: the spec's CEL rules (x-kubernetes-validations)
// are EchoSpec's +kubebuilder:validation:XValidation markers, and its
// fields' descriptions (what kubectl explain prints) their doc comments,
// as controller-gen would write them from types.go.
func TestCRDRulesMatchMarkers(t *testing.T) {
	crd, err := CRD()
	if err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	doc, fields := typeDoc(t, "types.go", "EchoSpec")
	var markers []string
	for _, line := range strings.Split(doc, "\n") {
		if m, ok := strings.CutPrefix(line, "+kubebuilder:validation:XValidation:"); ok {
			markers = append(markers, m)
		}
	}
	var rules []string
	for _, r := range spec.XValidations {
		rules = append(rules, fmt.Sprintf("rule=%q,message=%q,fieldPath=%q", r.Rule, r.Message, r.FieldPath))
	}
	if len(rules) == 0 || !slices.Equal(markers, rules) {
		t.Errorf("XValidation markers on EchoSpec:\n  %s\nrules of the CRD's spec:\n  %s", strings.Join(markers, "\n  "), strings.Join(rules, "\n  "))
	}
	for name, want := range fields {
		if got := spec.Properties[name].Description; got != want {
			t.Errorf("spec.%s description %q, doc comment %q", name, got, want)
		}
	}
}

// typeDoc is the doc comment of type name in file (one line per line), and
// the doc comment of each of its fields by JSON name, on one line.
func typeDoc(t *testing.T, file, name string) (string, map[string]string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || len(g.Specs) != 1 {
			continue
		}
		ts, ok := g.Specs[0].(*ast.TypeSpec)
		if !ok || ts.Name.Name != name {
			continue
		}
		var lines []string
		for _, c := range g.Doc.List {
			lines = append(lines, strings.TrimSpace(strings.TrimPrefix(c.Text, "//")))
		}
		fields := map[string]string{}
		for _, fl := range ts.Type.(*ast.StructType).Fields.List {
			tag, _ := strconv.Unquote(fl.Tag.Value)
			json, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			fields[json] = strings.Join(strings.Fields(fl.Doc.Text()), " ")
		}
		return strings.Join(lines, "\n"), fields
	}
	t.Fatalf("no type %s in %s", name, file)
	return "", nil
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

// TestReplicasZeroSent: an Echo scaled to zero says so in every write. As
// an int32 with omitempty, 0 was dropped, and the apiserver defaulted the
// Echo a Go client updated (a finalizer added) back to 1.
func TestReplicasZeroSent(t *testing.T) {
	tests := []struct {
		name string
		spec EchoSpec
		want string
	}{
		{"zero", EchoSpec{Message: "m", Replicas: ptr.To[int32](0)}, `{"message":"m","replicas":0}`},
		{"two", EchoSpec{Message: "m", Replicas: ptr.To[int32](2)}, `{"message":"m","replicas":2}`},
		{"unset: the apiserver's default", EchoSpec{Message: "m"}, `{"message":"m"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.spec)
			if err != nil || string(b) != tc.want {
				t.Fatalf("json = %s, %v; want %s", b, err, tc.want)
			}
		})
	}
	in := NewEcho("ns", "e", "m", 0)
	if out := in.DeepCopy(); out.Spec.Replicas == in.Spec.Replicas || *out.Spec.Replicas != 0 {
		t.Fatalf("DeepCopy shares or loses spec.replicas: %v", out.Spec.Replicas)
	}
}
