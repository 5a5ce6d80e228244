package proxy

// Writes that changed nothing. The apiserver answers an update or a patch
// whose result equals the stored object 200 without writing it: the object
// keeps its resourceVersion and no watch event goes out. An operator that
// does this on every reconcile (it sends a spec without the apiserver's
// defaults, so its comparison always finds a difference) costs a request
// each pass and shows as a rewrite on every pass; the proxy tells such a
// write from the answer: an update answered with the resourceVersion it
// sent, or a patch answered with the resourceVersion this proxy last saw
// the object at. For an update it also names the fields that differed
// between what was sent and what came back: the defaults the operator
// left out.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// maxDiffered bounds the fields an unchanged write names.
const maxDiffered = 4

// versions remembers the resourceVersion this proxy last saw each object
// answered at, by "resource namespace name" (a subresource's object is its
// parent's: they share the resourceVersion).
type versions struct {
	mu sync.Mutex
	rv map[string]string
}

func (v *versions) swap(key, rv string) (old string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.rv == nil {
		v.rv = map[string]string{}
	}
	old = v.rv[key]
	v.rv[key] = rv
	return old
}

// versionKey is an object's key in versions.
func versionKey(c call) string {
	base, _, _ := strings.Cut(c.resource, "/")
	return base + " " + c.namespace + " " + c.object
}

// tracksVersion says whether the answer to c carries one object whose
// resourceVersion the proxy reads.
func tracksVersion(c call) bool {
	switch c.verb {
	case "get", "create", "update", "patch":
		return c.object != "" || c.verb == "create"
	}
	return false
}

// unchangedWrite reads the answer to a 2xx get, create, update or patch
// (res.Body is replaced by what was read): whether an update or patch
// changed nothing and, for an update, the fields that differed.
func (p *Proxy) unchangedWrite(x *exchange, res *http.Response) (unchanged bool, differed []string) {
	if res.Header.Get("Content-Encoding") != "" {
		return false, nil // a compressed answer: too big to be one small object
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	_ = res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || len(body) > maxBody {
		return false, nil
	}
	got := resourceVersion(body)
	if got == "" {
		return false, nil
	}
	key := versionKey(x.call)
	if x.call.verb == "create" && x.call.object == "" { // generateName: named by the answer
		key = versionKey(call{resource: x.call.resource, namespace: x.call.namespace, object: createdName(x.call, body)})
	}
	last := p.versions.swap(key, got)
	switch x.call.verb {
	case "update":
		sent := resourceVersion(x.body)
		if sent == "" {
			sent = last // an unconditional update
		}
		if sent != got {
			return false, nil
		}
		return true, differedFields(x.body, body, strings.Contains(x.call.resource, "/"))
	case "patch":
		return last != "" && last == got, nil
	}
	return false, nil
}

// createdName is the object a create's body (or answer) names, as
// call.object names one; "" if it has no name (generateName) or cannot be
// read.
func createdName(c call, body []byte) string {
	base, _, _ := strings.Cut(c.resource, "/")
	if name := objectName(body); name != "" {
		return kindOf(base) + "/" + name
	}
	return ""
}

// objectName is metadata.name of one object in JSON or Kubernetes
// protobuf; "" if it cannot be read.
func objectName(b []byte) string { return metaString(b, 1, "name") }

// resourceVersion is metadata.resourceVersion of one object in JSON or in
// Kubernetes protobuf; "" if it cannot be read.
func resourceVersion(b []byte) string { return metaString(b, 6, "resourceVersion") }

// metaString is a string field of one object's metadata: field num of the
// ObjectMeta in protobuf (every built-in object has its ObjectMeta as field
// 1: name is 1, resourceVersion 6), key in JSON.
func metaString(b []byte, num uint64, key string) string {
	if bytes.HasPrefix(b, protoMagic) {
		meta, ok := protoField(unwrapUnknown(b), 1)
		if !ok {
			return ""
		}
		v, _ := protoField(meta, num)
		return string(v)
	}
	var o struct {
		Metadata map[string]json.RawMessage `json:"metadata"` // raw: only key is decoded
	}
	var v string
	if json.Unmarshal(b, &o) != nil || json.Unmarshal(o.Metadata[key], &v) != nil {
		return ""
	}
	return v
}

// decodeObject is one object as JSON decodes it, from JSON or Kubernetes
// protobuf (the built-in types client-go knows); nil if it cannot be read.
func decodeObject(b []byte) map[string]any {
	if bytes.HasPrefix(b, protoMagic) {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
		if err != nil {
			return nil
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil
		}
		return m
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// ignored are the fields the apiserver keeps or sets whatever was sent:
// they differ in every write and say nothing about the operator.
var ignored = []string{"apiVersion", "kind", "metadata.resourceVersion", "metadata.managedFields",
	"metadata.generation", "metadata.uid", "metadata.creationTimestamp", "metadata.selfLink"}

// differedFields names the fields in which the object sent and the object
// answered differ, outermost first ("spec.strategy" when the whole strategy
// was left out), at most maxDiffered and then how many more. The status of
// a write to the object itself (not to a subresource) is left out: it is
// not the writer's; a write to status leaves out the spec.
func differedFields(sent, answered []byte, subresource bool) []string {
	a, b := decodeObject(sent), decodeObject(answered)
	if a == nil || b == nil {
		return nil
	}
	skip := append(slices.Clone(ignored), "status")
	if subresource {
		skip[len(skip)-1] = "spec"
	}
	var out []string
	diffPaths("", a, b, skip, &out)
	sort.Strings(out)
	if len(out) > maxDiffered {
		out = append(out[:maxDiffered:maxDiffered], fmt.Sprintf("%d more", len(out)-maxDiffered))
	}
	return out
}

// diffPaths appends the paths under prefix where a and b differ, stopping
// at the first level that does.
func diffPaths(prefix string, a, b any, skip []string, out *[]string) {
	if slices.Contains(skip, prefix) {
		return
	}
	switch bv := b.(type) {
	case map[string]any:
		av, ok := a.(map[string]any)
		if !ok || (len(av) == 0 && len(bv) > 0) { // "strategy": {} was sent empty
			*out = append(*out, prefix)
			return
		}
		for _, k := range slices.Sorted(maps.Keys(bv)) {
			diffPaths(join(prefix, k), av[k], bv[k], skip, out)
		}
		for k := range av {
			if _, ok := bv[k]; !ok && !slices.Contains(skip, join(prefix, k)) {
				*out = append(*out, join(prefix, k))
			}
		}
	case []any:
		av, ok := a.([]any)
		if !ok || len(av) != len(bv) {
			*out = append(*out, prefix)
			return
		}
		for i := range bv {
			diffPaths(fmt.Sprintf("%s[%d]", prefix, i), av[i], bv[i], skip, out)
		}
	default:
		if fmt.Sprint(a) != fmt.Sprint(b) || (a == nil) != (b == nil) {
			*out = append(*out, prefix)
		}
	}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}
