package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPathWarning(t *testing.T) {
	bin := t.TempDir()
	self := filepath.Join(bin, "rlab")
	other := filepath.Join(t.TempDir(), "rlab")
	links := t.TempDir() // as `make install` leaves it: a link to bin/rlab
	for _, f := range []string{self, other} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(self, filepath.Join(links, "rlab")); err != nil {
		t.Fatal(err)
	}
	fix := `export PATH="` + bin + `:$PATH"`
	tests := []struct {
		name string
		path string
		want []string // "" wants no warning
	}{
		{"on PATH", "/usr/bin" + string(os.PathListSeparator) + bin, nil},
		{"on PATH through make install's link", links + string(os.PathListSeparator) + "/usr/bin", nil},
		{"not on PATH", "/usr/bin" + string(os.PathListSeparator) + "/bin", []string{"rlab is not on your PATH", fix, "make install"}},
		{"another rlab first", filepath.Dir(other) + string(os.PathListSeparator) + bin, []string{"runs " + other + ", not this rlab (" + self + ")", fix}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := pathWarning(tc.path, self)
			if (got == "") != (tc.want == nil) {
				t.Fatalf("pathWarning = %q, want a warning: %v", got, tc.want != nil)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("pathWarning = %q, lacks %q", got, w)
				}
			}
		})
	}
}
