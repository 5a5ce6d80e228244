package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDefault(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"xdg", map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/rlab"},
		{"home", map[string]string{"HOME": "/h"}, "/h/.local/state/rlab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Default(func(k string) string { return tc.env[k] })
			if err != nil || d.Root != tc.want {
				t.Fatalf("Default = %q, %v; want %q", d.Root, err, tc.want)
			}
		})
	}
}

func TestAcquireIsExclusive(t *testing.T) {
	d := Dir{Root: filepath.Join(t.TempDir(), "rlab")}
	if pid := d.Running(); pid != 0 {
		t.Fatalf("Running before Acquire = %d", pid)
	}
	l, err := d.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file, so a second Acquire in the same
	// process conflicts just as another process would.
	_, err = d.Acquire()
	var busy *BusyError
	if !errors.As(err, &busy) || busy.PID != os.Getpid() {
		t.Fatalf("second Acquire = %v, want BusyError with pid %d", err, os.Getpid())
	}
	if pid := d.Running(); pid != os.Getpid() {
		t.Fatalf("Running = %d, want %d", pid, os.Getpid())
	}
	st, err := os.Stat(d.Root)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode = %v, %v; want 0700", st.Mode().Perm(), err)
	}
	l.Release()
	if pid := d.Running(); pid != 0 {
		t.Fatalf("Running after Release = %d", pid)
	}
	l2, err := d.Acquire()
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	l2.Release()
}
