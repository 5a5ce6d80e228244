package echo

import (
	"strings"
	"testing"
)

// TestCheckImage: what kubelets can pull passes; what the apiserver would
// take but no node could run is refused, saying why.
func TestCheckImage(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  string // in the error; "" for none
	}{
		{DefaultImage, ""},
		{"nginx", ""},
		{"nginx:1.27", ""},
		{"rlab.local/echo-server:v1", ""},
		{"localhost:5000/team/echo:dev-1", ""},
		{"Registry.Example.com/echo", ""}, // a host may have capitals
		{"[::1]:5000/echo:v1", ""},
		{"hashicorp/http-echo@sha256:" + strings.Repeat("ab", 32), ""},
		{"hashicorp/http-echo:0.2.3@sha256:" + strings.Repeat("ab", 32), ""},
		{"", "want an image, e.g. x"},
		{"http-echo :1", "want an image with no spaces, e.g. x"},
		{" nginx", "with no spaces"},
		{"nginx\n", "with no spaces"},
		{"hashicorp/HTTP-echo", "with a lower-case NAME, e.g. x"},
		{"nginx:", "want an image reference"},
		{"nginx:-1", "want an image reference"},
		{"nginx@sha256:12", "want an image reference"},
		{"-nginx", "want an image reference"},
		{"a/" + strings.Repeat("b", 254), "at most 255 characters"},
	} {
		err := CheckImage(tc.image, "x")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckImage(%q) = %v, want nil", tc.image, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckImage(%q) = %v, want an error with %q", tc.image, err, tc.want)
		}
	}
}
