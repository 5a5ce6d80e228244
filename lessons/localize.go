package lessons

import (
	"strings"

	"github.com/kkloud/rlab/operators/style"
)

// Localize rewrites the style namespaces a lesson's text names
// ("kubectl -n echo-clientgo ...") into the namespaces of a sandbox with
// prefix p, so that on a shared cluster the commands a student copies work
// there. Only whole names are rewritten: "echo-clientgo-operator" (an
// identity) and "my-echo-clientgo" are left alone.
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

// nsAt is the style namespace that starts at text[i], as a whole word.
func nsAt(text string, i int) (string, bool) {
	if i > 0 && wordByte(text[i-1]) {
		return "", false
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
