package tenancy

import (
	"os/user"
	"testing"

	"github.com/kkloud/rlab/operators/style"
)

func TestDefaultPrefix(t *testing.T) {
	me := "user"
	if u, err := user.Current(); err == nil && u.Username != "" {
		me = u.Username
	}
	tests := []struct {
		k8sUser string
		want    style.Prefix
	}{
		{"system:serviceaccount:" + ClassroomNamespace + ":s1", "rlab-s1-"},
		{"system:serviceaccount:" + ClassroomNamespace + ":s12", "rlab-s12-"},
		// Anyone else, a ServiceAccount elsewhere included: this machine's login.
		{"kubernetes-admin", style.UserPrefix(me)},
		{"system:serviceaccount:default:s1", style.UserPrefix(me)},
	}
	for _, tt := range tests {
		if got := DefaultPrefix(tt.k8sUser); got != tt.want {
			t.Errorf("DefaultPrefix(%q) = %q, want %q", tt.k8sUser, got, tt.want)
		}
	}
}
