package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/framer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kkloud/rlab/operators/trace"
)

// seenFrame is what a watchCounter emitted for one frame.
type seenFrame struct{ typ, name, ns string }

// ---- building watch streams as the apiserver writes them ------------------

func configMap(name, ns string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: "7"}, Data: map[string]string{"k": "v"}}
}

// bookmark is what a BOOKMARK event carries: no name, a resourceVersion.
func bookmark() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}}
}

func gone() *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}
}

// jsonFrame is one event as the apiserver's JSON watch writes it: the object
// encoded by the negotiated serializer, the event by json.Encoder (newline).
func jsonFrame(t *testing.T, typ watch.EventType, obj runtime.Object) []byte {
	t.Helper()
	enc := scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion)
	raw, err := runtime.Encode(enc, obj)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: bytes.TrimSpace(raw)}}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// protoEvent is one event as the apiserver's protobuf watch encodes it: the
// object with the k8s\x00 envelope, the WatchEvent raw
// (protobuf.NewRawSerializer writes the generated Marshal).
func protoEvent(t *testing.T, typ watch.EventType, obj runtime.Object) []byte {
	t.Helper()
	enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), corev1.SchemeGroupVersion)
	raw, err := runtime.Encode(enc, obj)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, protoMagic) {
		t.Fatalf("object encoding %q has no k8s envelope", raw[:min(8, len(raw))])
	}
	ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}}
	b, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// protoFrame length-prefixes one frame as framer.NewLengthDelimitedFrameWriter does.
func protoFrame(t *testing.T, frame []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := framer.NewLengthDelimitedFrameWriter(&buf).Write(frame); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// enveloped wraps a raw message in the k8s\x00 runtime.Unknown envelope.
func enveloped(t *testing.T, msg []byte) []byte {
	t.Helper()
	b, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "WatchEvent"}, Raw: msg}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte(nil), protoMagic...), b...)
}

// ---- reading a stream through a watchCounter -------------------------------

// chunkReader returns its chunks one Read at a time (less if the caller's
// buffer is smaller), then EOF.
type chunkReader struct{ chunks [][]byte }

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.chunks) > 0 && len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	return n, nil
}

func (r *chunkReader) Close() error { return nil }

// through reads chunks through a watchCounter with a caller buffer of
// bufSize and returns the bytes that came out and what it emitted. It fails
// t if the counter ever buffered more than twice max.
func through(t *testing.T, f framing, max int, chunks [][]byte, bufSize int) ([]byte, []seenFrame) {
	t.Helper()
	var seen []seenFrame
	w := &watchCounter{body: &chunkReader{chunks: chunks}, framing: f, max: max,
		emit: func(typ, name, ns string) { seen = append(seen, seenFrame{typ, name, ns}) }}
	var out bytes.Buffer
	buf := make([]byte, bufSize)
	for {
		n, err := w.Read(buf)
		out.Write(buf[:n])
		if cap(w.buf) > 2*max {
			t.Fatalf("counter holds a %d-byte buffer, max %d", cap(w.buf), max)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, err := w.Read(buf); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read after EOF = %d, %v", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), seen
}

func TestWatchCounter(t *testing.T) {
	const ns = "echo-x"
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	added := jsonFrame(t, watch.Added, configMap("a", ns))
	modified := jsonFrame(t, watch.Modified, configMap("a", ns))
	deleted := jsonFrame(t, watch.Deleted, configMap("a", ns))
	pAdded := protoEvent(t, watch.Added, configMap("a", ns))
	pDeleted := protoEvent(t, watch.Deleted, configMap("b", "other"))
	big := jsonFrame(t, watch.Added, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: ns},
		Data: map[string]string{"k": strings.Repeat("x", 4096)}})
	pBig := protoEvent(t, watch.Added, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: ns},
		Data: map[string]string{"k": strings.Repeat("x", 4096)}})
	const small = 1024 // the cap of the "over the cap" cases

	a := seenFrame{"ADDED", "a", ns}
	tests := []struct {
		name    string
		framing framing
		max     int
		stream  []byte
		want    []seenFrame
	}{
		{"json one event", jsonFraming, maxFrame, added, []seenFrame{a}},
		{"json several events", jsonFraming, maxFrame, cat(added, modified, deleted),
			[]seenFrame{a, {"MODIFIED", "a", ns}, {"DELETED", "a", ns}}},
		{"json bookmark and error have no name", jsonFraming, maxFrame,
			cat(jsonFrame(t, watch.Bookmark, bookmark()), jsonFrame(t, watch.Error, gone())),
			[]seenFrame{{"BOOKMARK", "", ""}, {"ERROR", "", ""}}},
		{"json blank lines and CRLF", jsonFraming, maxFrame,
			cat([]byte("\n  \n"), bytes.TrimSuffix(added, []byte("\n")), []byte("\r\n\n")), []seenFrame{a}},
		{"json line that is not JSON", jsonFraming, maxFrame, cat([]byte("not json\n"), added),
			[]seenFrame{{"", "", ""}, a}},
		{"json last event without newline", jsonFraming, maxFrame, cat(added, bytes.TrimSpace(deleted)),
			[]seenFrame{a, {"DELETED", "a", ns}}},
		{"json stream cut mid-event", jsonFraming, maxFrame, cat(added, deleted[:len(deleted)/2]), []seenFrame{a}},
		{"json event over the cap", jsonFraming, small, cat(big, added, big),
			[]seenFrame{{"", "", ""}, a, {"", "", ""}}},
		{"protobuf events", protoFraming, maxFrame, cat(protoFrame(t, pAdded), protoFrame(t, pDeleted)),
			[]seenFrame{a, {"DELETED", "b", "other"}}},
		{"protobuf bookmark and error", protoFraming, maxFrame,
			cat(protoFrame(t, protoEvent(t, watch.Bookmark, bookmark())), protoFrame(t, protoEvent(t, watch.Error, gone()))),
			[]seenFrame{{"BOOKMARK", "", ""}, {"ERROR", "", ""}}},
		{"protobuf event in a k8s envelope", protoFraming, maxFrame, protoFrame(t, enveloped(t, pAdded)), []seenFrame{a}},
		{"protobuf empty and unreadable frames", protoFraming, maxFrame,
			cat(protoFrame(t, nil), protoFrame(t, []byte{0xff, 0xff}), protoFrame(t, pAdded)),
			[]seenFrame{{"", "", ""}, {"", "", ""}, a}},
		{"protobuf stream cut mid-frame", protoFraming, maxFrame, cat(protoFrame(t, pAdded), protoFrame(t, pDeleted)[:10]),
			[]seenFrame{a}},
		{"protobuf stream cut mid-prefix", protoFraming, maxFrame, cat(protoFrame(t, pAdded), []byte{0, 0}),
			[]seenFrame{a}},
		{"protobuf frame over the cap", protoFraming, small, cat(protoFrame(t, pBig), protoFrame(t, pAdded), protoFrame(t, pBig)),
			[]seenFrame{{"", "", ""}, a, {"", "", ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check := func(how string, chunks [][]byte, bufSize int) {
				t.Helper()
				out, seen := through(t, tc.framing, tc.max, chunks, bufSize)
				if !bytes.Equal(out, tc.stream) {
					t.Fatalf("%s: bytes changed on the way through:\n got %q\nwant %q", how, out, tc.stream)
				}
				if !slices.Equal(seen, tc.want) {
					t.Fatalf("%s: emitted %+v, want %+v", how, seen, tc.want)
				}
			}
			check("in one read", [][]byte{clone(tc.stream)}, 32<<10)
			check("a byte a read", [][]byte{clone(tc.stream)}, 1)
			check("three bytes a read", [][]byte{clone(tc.stream)}, 3)
			for i := 1; i < len(tc.stream); i++ {
				check(fmt.Sprintf("split at %d", i), [][]byte{clone(tc.stream[:i]), clone(tc.stream[i:])}, 32<<10)
			}
		})
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func TestWatchFraming(t *testing.T) {
	tests := []struct {
		contentType, encoding string
		want                  framing
	}{
		{"application/json", "", jsonFraming},
		{"application/json;stream=watch", "", jsonFraming},
		{"application/json; charset=utf-8", "identity", jsonFraming},
		{"application/vnd.kubernetes.protobuf;stream=watch", "", protoFraming},
		{"application/json", "gzip", noFraming},
		{"application/cbor-seq", "", noFraming},
		{"text/plain", "", noFraming},
		{"", "", noFraming},
	}
	for _, tc := range tests {
		h := http.Header{}
		h.Set("Content-Type", tc.contentType)
		if tc.encoding != "" {
			h.Set("Content-Encoding", tc.encoding)
		}
		if got := watchFraming(h); got != tc.want {
			t.Errorf("watchFraming(%q, %q) = %d, want %d", tc.contentType, tc.encoding, got, tc.want)
		}
	}
}

func isWatchEvent(e trace.Event) bool { return e.Kind == trace.APIWatchEvent }

// TestWatchEventsPublished: the fake's watch delivers ADDED, then MODIFIED;
// each is published once, counted apart from requests, and nothing else is.
func TestWatchEventsPublished(t *testing.T) {
	fx := newFixture(t)
	w := fx.startWatch(t)
	check := func(e trace.Event, typ string) {
		t.Helper()
		if trace.As[trace.WatchEvent](e).Type != typ || e.Object != "ConfigMap/one" || e.Namespace != testNS ||
			e.Resource() != "configmaps" || e.Source != "proxy/clientgo/a" {
			t.Errorf("watch event = %+v, want %s of ConfigMap/one", e, typ)
		}
	}
	check(fx.events.waitEvents(t, 1, isWatchEvent)[0], "ADDED")
	fx.api.releaseWatches()
	nextEvent(t, w, watch.Modified, "second")
	check(fx.events.waitEvents(t, 2, isWatchEvent)[1], "MODIFIED")
	watchEnds(t, w, "the upstream ended it")

	// Requests whose bodies are JSON objects, and a watch refused with a
	// Status line, deliver no watch events.
	if _, err := fx.cs.CoreV1().ConfigMaps(testNS).Get(t.Context(), "x", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.cs.CoreV1().ConfigMaps(testNS).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.cs.CoreV1().Secrets(testNS).Watch(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("watch secrets = %v, want Forbidden", err)
	}
	// Events are delivered in order: once the refused watch's request event
	// is in, any watch event the requests before it caused is too.
	refused := fx.events.waitEvents(t, 1, isCall("watch", "secrets"))[0]
	if code := refused.Code(); code != http.StatusForbidden {
		t.Errorf("refused watch = %+v", refused)
	}
	if n := len(fx.events.matching(isWatchEvent)); n != 2 {
		t.Errorf("%d api.watch_event events, want 2: %+v", n, fx.events.matching(isWatchEvent))
	}
	if got := fx.p.WatchEvents(); got != 2 {
		t.Errorf("WatchEvents = %d, want 2", got)
	}
	want := map[string]int{"watch configmaps": 1, "get configmaps": 1, "list configmaps": 1, "watch secrets": 1}
	if got := fx.p.Counts(); !maps.Equal(got, want) || fx.p.Total() != 4 {
		t.Errorf("counts = %v, total %d; want %v, 4: watch events are not requests", got, fx.p.Total(), want)
	}
}
