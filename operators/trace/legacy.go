package trace

import (
	"fmt"
	"reflect"
	"time"
)

// lookup returns the value of e's field named key as it would have sat in
// the old Fields map: absent when the payload omits it.
func (e Event) lookup(key string) (any, bool) {
	if u, ok := e.Payload.(Unknown); ok {
		v, ok := u[key]
		return v, ok
	}
	if e.Payload == nil {
		return nil, false
	}
	v := reflect.ValueOf(e.Payload)
	for _, f := range fieldsFor(e.Kind) {
		if f.key != key {
			continue
		}
		fv := v.Field(f.index)
		if f.omitempty && fv.IsZero() {
			return nil, false
		}
		if fv.Kind() == reflect.Pointer {
			fv = fv.Elem()
		}
		return fv.Interface(), true
	}
	return nil, false
}

// Str returns a field by key as text, or "".
//
// Deprecated: read the typed payload.
func (e Event) Str(k string) string {
	v, _ := e.lookup(k)
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	case []string:
		return fmt.Sprint(joinList(v))
	default:
		return fmt.Sprint(v)
	}
}

func joinList(l []string) string {
	s := ""
	for i, x := range l {
		if i > 0 {
			s += ","
		}
		s += x
	}
	return s
}

// Num returns a numeric field by key as float64.
//
// Deprecated: read the typed payload.
func (e Event) Num(k string) (float64, bool) {
	v, _ := e.lookup(k)
	switch v := v.(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case time.Duration:
		return float64(v.Milliseconds()), true
	}
	return 0, false
}

// Bool returns a boolean field by key.
//
// Deprecated: read the typed payload.
func (e Event) Bool(k string) bool {
	v, _ := e.lookup(k)
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}
