package cluster

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/simtest"
)

// TestStartRetriesTakenPort: a port picked free but taken before the
// apiserver binds it costs a restart on new ports, not a failed start.
func TestStartRetriesTakenPort(t *testing.T) {
	simtest.NeedsControlPlane(t)
	dir, err := assets.Find(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	orig := freePort
	t.Cleanup(func() { freePort = orig })
	calls := 0
	freePort = func() (int, error) {
		calls++
		if calls == 3 { // etcd client, etcd peer, then the apiserver
			return taken, nil
		}
		return orig()
	}
	root := t.TempDir()
	var retried strings.Builder
	e := NewEnvtest(EnvtestOptions{
		Assets: dir,
		RunDir: filepath.Join(root, "run"),
		LogDir: filepath.Join(root, "logs"),
		PIDDir: filepath.Join(root, "pids"),
		Progress: func(p Phase) {
			if p.Name == "apiserver+etcd" && calls > 3 {
				retried.WriteString("yes")
			}
		},
	})
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if retried.String() != "yes" {
		t.Fatalf("apiserver+etcd did not start again after the taken port (freePort called %d times)", calls)
	}
}

// TestFreePortBelowEphemeral: the ports handed to the components come from
// below the kernel's ephemeral range, which outgoing connections and :0
// listeners draw from, and are free.
func TestFreePortBelowEphemeral(t *testing.T) {
	for range 20 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < lowPorts[0] || p >= lowPorts[1] {
			t.Fatalf("port %d, want one in [%d, %d)", p, lowPorts[0], lowPorts[1])
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
}
