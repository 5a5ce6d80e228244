package lessons

import (
	"testing"

	"github.com/kkloud/rlab/operators/style"
)

func TestLocalize(t *testing.T) {
	const p = style.Prefix("rlab-s1-")
	tests := []struct{ in, want string }{
		{"kubectl -n echo-clientgo get ec", "kubectl -n rlab-s1-echo-clientgo get ec"},
		{"(echo-shell, echo-clientgo, echo-runtime)", "(rlab-s1-echo-shell, rlab-s1-echo-clientgo, rlab-s1-echo-runtime)"},
		{"`echo-shell`", "`rlab-s1-echo-shell`"},
		{"reconciling `echo-clientgo/hello`", "reconciling `rlab-s1-echo-clientgo/hello`"},
		{"--as=echo-clientgo-operator", "--as=echo-clientgo-operator"},
		{"my-echo-shell", "my-echo-shell"},
		{"echo-shell", "rlab-s1-echo-shell"},
		{"no namespace here", "no namespace here"},
	}
	for _, tt := range tests {
		if got := Localize(tt.in, p); got != tt.want {
			t.Errorf("Localize(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := Localize(tt.in, ""); got != tt.in {
			t.Errorf("Localize(%q, no prefix) = %q, want it unchanged", tt.in, got)
		}
	}
}
