package proxy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/kkloud/rlab/operators/trace"
)

// framing is how a watch response body splits into events.
type framing int

const (
	noFraming    framing = iota // not a stream the proxy can split: passed through uncounted
	jsonFraming                 // one JSON object a line, as the apiserver's json.Encoder writes them
	protoFraming                // a 4-byte big-endian length, then that many bytes (framer.NewLengthDelimitedFrameWriter)
)

// maxFrame bounds what the proxy buffers of one watch event; a larger one is
// passed through and counted with an empty type. The apiserver's own objects
// stay far below it (etcd's default request limit is 1.5 MiB).
const maxFrame = 8 << 20

// watchFraming is the framing of a watch response, from its headers.
func watchFraming(h http.Header) framing {
	if enc := h.Get("Content-Encoding"); enc != "" && enc != "identity" {
		return noFraming // compressed bytes have no frames to see
	}
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		return noFraming
	}
	switch mt {
	case "application/json":
		return jsonFraming
	case "application/vnd.kubernetes.protobuf":
		return protoFraming
	}
	return noFraming
}

// watchCounter passes a watch response body through unchanged and calls emit
// once for each complete frame, after its last byte was read. It is read by
// one goroutine, the ReverseProxy's copy loop, and never blocks it: emit
// only queues.
type watchCounter struct {
	body    io.ReadCloser
	framing framing
	max     int // maxFrame, smaller in tests
	emit    func(typ, name, namespace string)
	// frame, if set, is called instead of emit with the frame's bytes as
	// they came (nil for one over max): a shaped watch (shape.go) hands
	// them out itself.
	frame func(raw []byte, typ, name, namespace string)

	buf  []byte // the current frame so far, while it fits in max
	over bool   // the current frame outgrew max: counted, not buffered

	// protobuf only: the length prefix as it arrives, and what is left of
	// the frame it announced.
	hdr     [4]byte
	nhdr    int
	inFrame bool
	left    int
	ended   bool // EOF seen: a last unterminated JSON line was handled
}

func (w *watchCounter) Read(b []byte) (int, error) {
	n, err := w.body.Read(b)
	if n > 0 {
		if w.framing == protoFraming {
			w.scanProto(b[:n])
		} else {
			w.scanJSON(b[:n])
		}
	}
	if errors.Is(err, io.EOF) && !w.ended {
		w.ended = true
		w.atEOF()
	}
	return n, err
}

func (w *watchCounter) Close() error { return w.body.Close() }

// raw is the current frame as it came on the wire, a copy; nil if it
// outgrew max.
func (w *watchCounter) raw() []byte {
	if w.over {
		return nil
	}
	if w.framing == protoFraming {
		out := make([]byte, 4, 4+len(w.buf))
		binary.BigEndian.PutUint32(out, uint32(len(w.buf)))
		return append(out, w.buf...)
	}
	return append(append(make([]byte, 0, len(w.buf)+1), w.buf...), '\n')
}

// keep appends part of the current frame unless the frame outgrew max.
func (w *watchCounter) keep(b []byte) {
	if w.over {
		return
	}
	if len(w.buf)+len(b) > w.max {
		w.over = true
		w.buf = w.buf[:0]
		return
	}
	w.buf = append(w.buf, b...)
}

// frameDone emits the current frame and starts the next one.
func (w *watchCounter) frameDone(decode func([]byte) (string, string, string)) {
	var typ, name, ns string
	if !w.over {
		typ, name, ns = decode(w.buf)
	}
	if w.frame != nil {
		w.frame(w.raw(), typ, name, ns)
	} else {
		w.emit(typ, name, ns)
	}
	w.buf, w.over = w.buf[:0], false
	if cap(w.buf) > 1<<20 {
		w.buf = nil // one large object should not pin a large buffer for the watch's life
	}
}

func (w *watchCounter) scanJSON(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.keep(b)
			return
		}
		w.keep(b[:i])
		b = b[i+1:]
		if !w.over && len(bytes.TrimSpace(w.buf)) == 0 {
			w.buf = w.buf[:0] // a blank line is no event
			continue
		}
		w.frameDone(decodeJSONEvent)
	}
}

func (w *watchCounter) scanProto(b []byte) {
	for len(b) > 0 {
		if !w.inFrame {
			k := copy(w.hdr[w.nhdr:], b)
			w.nhdr += k
			b = b[k:]
			if w.nhdr < len(w.hdr) {
				return
			}
			w.nhdr = 0
			w.left = int(binary.BigEndian.Uint32(w.hdr[:]))
			w.inFrame = true
			w.over = w.left > w.max
		}
		k := min(w.left, len(b))
		w.keep(b[:k])
		w.left -= k
		b = b[k:]
		if w.left == 0 {
			w.inFrame = false
			w.frameDone(decodeProtoEvent)
		}
	}
}

// atEOF handles what is left when the stream ends: a last JSON object
// without its newline is still an event the client decodes; a cut one, or a
// cut protobuf frame, is not.
func (w *watchCounter) atEOF() {
	if w.framing != jsonFraming || w.over {
		return
	}
	if last := bytes.TrimSpace(w.buf); len(last) > 0 && json.Valid(last) {
		w.frameDone(decodeJSONEvent)
	}
}

// decodeJSONEvent reads a metav1.WatchEvent's type and its object's name
// and namespace; what it cannot read is "".
func decodeJSONEvent(b []byte) (typ, name, namespace string) {
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		} `json:"object"`
	}
	if json.Unmarshal(b, &ev) != nil {
		return "", "", ""
	}
	return ev.Type, ev.Object.Metadata.Name, ev.Object.Metadata.Namespace
}

// protoMagic starts a protobuf message wrapped in a runtime.Unknown, as the
// apiserver encodes the object inside a watch event.
var protoMagic = []byte("k8s\x00")

// decodeProtoEvent reads a metav1.WatchEvent in protobuf: field 1 is its
// type, field 2 a RawExtension whose field 1 holds the object. The watch
// stream encodes the event itself raw (protobuf.NewRawSerializer), the
// object with the k8s\x00 runtime.Unknown envelope; either is read with or
// without it.
func decodeProtoEvent(b []byte) (typ, name, namespace string) {
	b = unwrapUnknown(b)
	if t, ok := protoField(b, 1); ok {
		typ = string(t)
	}
	ext, ok := protoField(b, 2)
	if !ok {
		return typ, "", ""
	}
	obj, ok := protoField(ext, 1)
	if !ok {
		return typ, "", ""
	}
	obj = unwrapUnknown(obj)
	// Every built-in object has its ObjectMeta as field 1, and ObjectMeta
	// has name as field 1 and namespace as field 3.
	meta, ok := protoField(obj, 1)
	if !ok {
		return typ, "", ""
	}
	n, _ := protoField(meta, 1)
	ns, _ := protoField(meta, 3)
	return typ, string(n), string(ns)
}

// unwrapUnknown is the raw message (field 2) of a k8s\x00 runtime.Unknown,
// or b itself if it has no envelope.
func unwrapUnknown(b []byte) []byte {
	if !bytes.HasPrefix(b, protoMagic) {
		return b
	}
	raw, _ := protoField(b[len(protoMagic):], 2)
	return raw
}

// protoField is the first length-delimited field num of a protobuf message,
// skipping the rest without decoding it. It reports false if the field is
// absent or the message is malformed before it.
func protoField(b []byte, num uint64) ([]byte, bool) {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, false
		}
		b = b[n:]
		var skip uint64
		switch key & 7 {
		case 0: // varint
			_, n := binary.Uvarint(b)
			if n <= 0 {
				return nil, false
			}
			skip = uint64(n)
		case 1: // fixed64
			skip = 8
		case 2: // length-delimited
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return nil, false
			}
			if key>>3 == num {
				return b[n : n+int(l)], true
			}
			skip = uint64(n) + l
		case 5: // fixed32
			skip = 4
		default: // groups: never used by Kubernetes
			return nil, false
		}
		if skip > uint64(len(b)) {
			return nil, false
		}
		b = b[skip:]
	}
	return nil, false
}

// countWatch wraps the body of a watch response the proxy can split, so
// that every event it delivers is counted and published.
func (p *Proxy) countWatch(x *exchange, res *http.Response) {
	f := watchFraming(res.Header)
	if f == noFraming {
		p.log.Debug("watch not counted: unknown framing", "content_type", res.Header.Get("Content-Type"),
			"content_encoding", res.Header.Get("Content-Encoding"))
		return
	}
	// Objects are named as api.request names them, by the watched
	// resource, so the two join.
	wc := &watchCounter{body: res.Body, framing: f, max: maxFrame, emit: func(typ, name, namespace string) {
		p.watchEvents.Add(1)
		p.enqueue(p.watchEvent(x, trace.APIWatchEvent, typ, name, namespace, nil))
	}}
	if shaped(x.at) {
		res.Body = p.shape(x, wc, res.Request.Context())
		return
	}
	res.Body = wc
}

// watchEvent is an event of kind about one event a watch delivered.
// A fault's injection is given as in, nil for the watch event itself.
func (p *Proxy) watchEvent(x *exchange, kind trace.Kind, typ, name, namespace string, in *trace.Injection) trace.Event {
	var payload trace.Payload = trace.WatchEvent{Resource: x.call.resource, Type: typ}
	if in != nil {
		in.Resource, in.Type = x.call.resource, typ
		payload = *in
	}
	e := trace.Event{Time: time.Now(), Source: p.source, Kind: kind, Namespace: x.call.namespace, Payload: payload}
	if e.Namespace == "" {
		e.Namespace = namespace // a watch across all namespaces
	}
	if name != "" {
		// Objects are named as api.request names them, by the watched
		// resource, so the two join.
		resource, _, _ := strings.Cut(x.call.resource, "/")
		e.Object = trace.Object(kindOf(resource), name)
	}
	return e
}

// WatchEvents is the number of watch events the proxy delivered (every
// api.watch_event it published or dropped). Counts and Total leave them out.
func (p *Proxy) WatchEvents() int { return int(p.watchEvents.Load()) }
