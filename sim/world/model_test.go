package world

import (
	"testing"

	"github.com/kkloud/rlab/operators/style"
)

func TestSnapshotStyle(t *testing.T) {
	shell, rt := &NamespaceView{}, &NamespaceView{}
	tests := []struct {
		name string
		sn   Snapshot
		st   style.Style
		want *NamespaceView
	}{
		{"own cluster", Snapshot{Namespaces: map[string]*NamespaceView{"echo-shell": shell}}, style.Shell, shell},
		{"prefixed", Snapshot{Namespaces: map[string]*NamespaceView{"rlab-s1-echo-runtime": rt, "rlab-s1-echo-shell": shell}}, style.Runtime, rt},
		{"not watched", Snapshot{Namespaces: map[string]*NamespaceView{"rlab-s1-echo-shell": shell}}, style.ClientGo, nil},
		{"empty", Snapshot{}, style.Shell, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sn.Style(tt.st); got != tt.want {
				t.Errorf("Style(%s) = %p, want %p", tt.st, got, tt.want)
			}
		})
	}
}
