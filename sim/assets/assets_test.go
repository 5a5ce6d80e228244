package assets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func envOf(m map[string]string) Env { return func(k string) string { return m[k] } }

func TestDir(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		dir, from string
	}{
		{"kubebuilder wins", map[string]string{"KUBEBUILDER_ASSETS": "/kb", "RLAB_ASSETS": "/r", "HOME": "/h"}, "/kb", "KUBEBUILDER_ASSETS"},
		{"rlab assets", map[string]string{"RLAB_ASSETS": "/r", "XDG_CACHE_HOME": "/c"}, "/r", "RLAB_ASSETS"},
		{"xdg cache", map[string]string{"XDG_CACHE_HOME": "/c", "HOME": "/h"}, "/c/rlab/controlplane/" + KubeVersion, "cache"},
		{"home cache", map[string]string{"HOME": "/h"}, "/h/.cache/rlab/controlplane/" + KubeVersion, "cache"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, from := Dir(envOf(tc.env))
			if dir != tc.dir || from != tc.from {
				t.Fatalf("Dir = %q (%s), want %q (%s)", dir, from, tc.dir, tc.from)
			}
		})
	}
}

func TestFind(t *testing.T) {
	full := t.TempDir()
	for _, b := range Binaries {
		if err := os.WriteFile(filepath.Join(full, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	partial := t.TempDir()
	for _, b := range Binaries {
		if b == "kube-controller-manager" {
			continue
		}
		mode := os.FileMode(0o755)
		if b == "kwok" {
			mode = 0o644 // present but not executable counts as missing
		}
		if err := os.WriteFile(filepath.Join(partial, b), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name        string
		env         map[string]string
		wantMissing []string
		wantInMsg   []string
	}{
		{"complete", map[string]string{"RLAB_ASSETS": full}, nil, nil},
		{"partial rlab dir", map[string]string{"RLAB_ASSETS": partial},
			[]string{"kube-controller-manager", "kwok"}, []string{"rlab assets get", "make assets", "kube-controller-manager, kwok", partial}},
		{"envtest-only kubebuilder dir", map[string]string{"KUBEBUILDER_ASSETS": partial},
			[]string{"kube-controller-manager", "kwok"}, []string{"KUBEBUILDER_ASSETS=" + partial, "unset KUBEBUILDER_ASSETS", "rlab assets get"}},
		{"empty cache", map[string]string{"XDG_CACHE_HOME": t.TempDir()},
			Binaries, []string{"rlab assets get"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Find(envOf(tc.env))
			if tc.wantMissing == nil {
				if err != nil {
					t.Fatalf("Find: %v", err)
				}
				return
			}
			var miss *MissingError
			if !errors.As(err, &miss) {
				t.Fatalf("Find error = %v, want *MissingError", err)
			}
			if strings.Join(miss.Missing, ",") != strings.Join(tc.wantMissing, ",") {
				t.Errorf("missing = %v, want %v", miss.Missing, tc.wantMissing)
			}
			for _, s := range tc.wantInMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q lacks %q", err, s)
				}
			}
		})
	}
}

func TestSourceRootFromEnv(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, BuildScript), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := SourceRoot(envOf(map[string]string{"RLAB_SRC": sub}))
	if err != nil || got != root {
		t.Fatalf("SourceRoot = %q, %v; want %q", got, err, root)
	}
}
