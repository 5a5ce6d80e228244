package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The wire format is today's and yesterday's: an event is one JSON object
// whose "fields" object holds the payload under the keys of its json tags.
// Decoding is lenient in one way only: bash's trace() writes a value made of
// digits as a JSON number and anything else as a string, so a string field
// takes a number (its text) and a numeric field takes a string holding a
// number, as Event.Str and Event.Num did when the fields were a map.

// wireEvent is Event as it is written.
type wireEvent struct {
	Time      time.Time       `json:"time"`
	Source    string          `json:"source"`
	Kind      Kind            `json:"kind"`
	Namespace string          `json:"ns,omitempty"`
	Object    string          `json:"object,omitempty"`
	Fields    json.RawMessage `json:"fields,omitempty"`
}

// field is one payload field: its index in the struct, its key, and the
// kinds of its family that carry it (all of them if kinds is nil).
type field struct {
	index     int
	key       string
	omitempty bool
	kinds     []Kind
}

func (f field) carriedBy(k Kind) bool { return f.kinds == nil || slices.Contains(f.kinds, k) }

var fieldCache sync.Map // reflect.Type → []field

// fieldsOf lists the fields of a payload struct type, from its tags.
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		f := field{index: i, key: name, omitempty: opts == "omitempty"}
		if k := sf.Tag.Get("trace"); k != "" {
			for _, s := range strings.Fields(k) {
				f.kinds = append(f.kinds, Kind(s))
			}
		}
		fs = append(fs, f)
	}
	fieldCache.Store(t, fs)
	return fs
}

// kindFields are the fields each kind carries, from fieldsOf its payload.
var kindFields = func() map[Kind][]field {
	m := make(map[Kind][]field, len(payloadOf))
	for k, p := range payloadOf {
		for _, f := range fieldsOf(reflect.TypeOf(p)) {
			if f.carriedBy(k) {
				m[k] = append(m[k], f)
			}
		}
	}
	return m
}()

// fieldsFor lists the fields kind carries, nil for an unknown kind.
func fieldsFor(k Kind) []field { return kindFields[k] }

// MarshalJSON writes e in the wire format.
func (e Event) MarshalJSON() ([]byte, error) {
	w := wireEvent{Time: e.Time, Source: e.Source, Kind: e.Kind, Namespace: e.Namespace, Object: e.Object}
	fields, err := encodeFields(e.Kind, e.Payload)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Kind, err)
	}
	w.Fields = fields
	return json.Marshal(w)
}

// encodeFields writes p's fields that kind carries as a JSON object, nil if
// there are none.
func encodeFields(kind Kind, p Payload) (json.RawMessage, error) {
	switch p := p.(type) {
	case nil:
		return nil, nil
	case Unknown:
		if len(p) == 0 {
			return nil, nil
		}
		return json.Marshal(map[string]any(p))
	}
	v := reflect.ValueOf(p)
	var buf bytes.Buffer
	for _, f := range fieldsOf(v.Type()) {
		fv := v.Field(f.index)
		if !f.carriedBy(kind) && payloadOf[kind] != nil || f.omitempty && fv.IsZero() {
			continue
		}
		val, err := encodeValue(fv)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.key, err)
		}
		if buf.Len() == 0 {
			buf.WriteByte('{')
		} else {
			buf.WriteByte(',')
		}
		key, _ := json.Marshal(f.key)
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(val)
	}
	if buf.Len() == 0 {
		return nil, nil
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func encodeValue(v reflect.Value) ([]byte, error) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []byte("null"), nil
		}
		return encodeValue(v.Elem())
	case reflect.Slice: // a list travels comma-separated, as bash would write it
		return json.Marshal(strings.Join(v.Interface().([]string), ","))
	}
	return json.Marshal(v.Interface())
}

// UnmarshalJSON reads e from the wire format: the payload its kind carries,
// or an Unknown for a kind this build does not know. A key the kind does
// not carry, or a value that does not fit its field, is remembered for
// CheckSchema rather than failing the line: it is still an event.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Event{Time: w.Time, Source: w.Source, Kind: w.Kind, Namespace: w.Namespace, Object: w.Object}
	var raw map[string]json.RawMessage
	if len(w.Fields) > 0 {
		if err := json.Unmarshal(w.Fields, &raw); err != nil {
			return fmt.Errorf("fields: %w", err)
		}
	}
	proto, known := payloadOf[w.Kind]
	if !known {
		if len(raw) == 0 {
			return nil
		}
		u := Unknown{}
		for k, v := range raw {
			var x any
			if err := json.Unmarshal(v, &x); err != nil {
				return fmt.Errorf("field %s: %w", k, err)
			}
			u[k] = x
		}
		e.Payload = u
		return nil
	}
	pv := reflect.New(reflect.TypeOf(proto)).Elem()
	fields := fieldsFor(w.Kind)
	for k, v := range raw {
		i := slices.IndexFunc(fields, func(f field) bool { return f.key == k })
		if i < 0 {
			e.offSchema = append(e.offSchema, k)
			continue
		}
		if err := decodeValue(pv.Field(fields[i].index), v); err != nil {
			e.offSchema = append(e.offSchema, k+" ("+err.Error()+")")
		}
	}
	slices.Sort(e.offSchema)
	e.Payload = pv.Interface().(Payload)
	return nil
}

var errFit = errors.New("value does not fit the field")

// decodeValue sets v from one JSON value, taking a number where a string is
// expected and a numeric string where a number is.
func decodeValue(v reflect.Value, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
	case '{', '[':
		return errFit
	default:
		s = string(raw) // a number, true or false: its text
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		if s != "true" && s != "false" {
			return errFit
		}
		v.SetBool(s == "true")
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if ferr != nil {
				return errFit
			}
			n = int64(f)
		}
		v.SetInt(n)
	case reflect.Float64, reflect.Float32:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return errFit
		}
		v.SetFloat(f)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := decodeValue(p.Elem(), raw); err != nil {
			return err
		}
		v.Set(p)
	case reflect.Slice:
		if s != "" {
			v.Set(reflect.ValueOf(strings.Split(s, ",")))
		}
	default:
		return errFit
	}
	return nil
}
