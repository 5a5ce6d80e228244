package lessons

import (
	"strings"

	"github.com/kkloud/rlab/operators/style"
)

// Localize rewrites the style namespaces a lesson's text names
// ("kubectl -n echo-clientgo ...") into the namespaces of a sandbox with
// prefix p, so that on a shared cluster the commands a student copies work
// there. Only whole names are rewritten: "echo-clientgo-operator" (an
// identity) and "my-echo-clientgo" are left alone. A namespace a shell
// loop makes ("for s in shell clientgo runtime; do kubectl -n echo-$s")
// is rewritten too, or the loop would name namespaces the student may not
// touch.
func Localize(text string, p style.Prefix) string {
	if p == "" {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		if ns, ok := nsAt(text, i); ok {
			b.WriteString(string(p))
			b.WriteString(ns)
			i += len(ns)
			continue
		}
		b.WriteByte(text[i])
		i++
	}
	return b.String()
}

// nsAt is the style namespace that starts at text[i], as a whole word:
// one of the styles' or "echo-$VAR" (or "echo-${VAR}").
func nsAt(text string, i int) (string, bool) {
	if i > 0 && wordByte(text[i-1]) {
		return "", false
	}
	if v := shellVar(text[i:], "echo-"); v != "" {
		return v, true
	}
	for _, st := range style.All() {
		ns := st.Namespace()
		if strings.HasPrefix(text[i:], ns) && (i+len(ns) == len(text) || !wordByte(text[i+len(ns)])) {
			return ns, true
		}
	}
	return "", false
}

// wordByte is a byte that continues a Kubernetes name.
func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// shellVar is the "prefix$VAR" or "prefix${VAR}" that text starts with,
// VAR a shell variable's name; "" if it starts with none.
func shellVar(text, prefix string) string {
	rest, ok := strings.CutPrefix(text, prefix+"$")
	if !ok {
		return ""
	}
	braced := strings.HasPrefix(rest, "{")
	if braced {
		rest = rest[1:]
	}
	n := 0
	for n < len(rest) && (rest[n] == '_' || rest[n] >= 'a' && rest[n] <= 'z' || rest[n] >= 'A' && rest[n] <= 'Z' || n > 0 && rest[n] >= '0' && rest[n] <= '9') {
		n++
	}
	switch {
	case n == 0:
		return ""
	case braced && (n == len(rest) || rest[n] != '}'):
		return ""
	case braced && n+1 < len(rest) && wordByte(rest[n+1]):
		return "" // echo-${s}-operator: not a namespace
	case braced:
		return text[:len(prefix)+3+n]
	case n < len(rest) && wordByte(rest[n]):
		return "" // echo-$s-operator: not a namespace
	}
	return text[:len(prefix)+1+n]
}
