package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/simtest"
)

// fakeDoer says what it would do; an op with style "runtime" fails, one
// with style "all" blocks until release is closed or its context ends.
type fakeDoer struct {
	running, most atomic.Int32
	mu            sync.Mutex
	release       chan struct{}
	ops           []lessons.Op
}

func newDoer() *fakeDoer { return &fakeDoer{release: make(chan struct{})} }

// performed is how many ops it was asked to do.
func (f *fakeDoer) performed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ops)
}

// hold makes the next blocking ops wait for a new release; letGo releases them.
func (f *fakeDoer) hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.release = make(chan struct{})
}

func (f *fakeDoer) letGo() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.release)
}

// waitRunning polls until an op runs.
func (f *fakeDoer) waitRunning(t *testing.T) {
	t.Helper()
	simtest.Eventually(t, 5*time.Second, "an op running", simtest.True(func() bool { return f.running.Load() > 0 }))
}

// Prepare reads words as rlab does (lessons.ParseVerb).
func (f *fakeDoer) Prepare(words []string) (Act, error) {
	op, err := lessons.ParseVerb(words)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) ([]string, error) { return f.do(ctx, op) }, nil
}

func (f *fakeDoer) do(ctx context.Context, op lessons.Op) ([]string, error) {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		m := f.most.Load()
		if n <= m || f.most.CompareAndSwap(m, n) {
			break
		}
	}
	f.mu.Lock()
	f.ops = append(f.ops, op)
	release := f.release
	f.mu.Unlock()
	switch op.Args.Str("style") {
	case "runtime":
		return nil, errors.New("no leader: nobody holds the lease of runtime")
	case "all":
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return []string{fmt.Sprintf("did %s %s", op.Name, op.Args.Str("style"))}, nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// sockPath is a socket path short enough for sun_path, whatever TMPDIR is.
func sockPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "rlab-ctl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "control.sock")
}

func start(t *testing.T, d Doer, timeout time.Duration) *Server {
	t.Helper()
	s, err := listen(sockPath(t), d, quiet(), timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A request comes back with what was done, or the error the student reads:
// the verb's own, the action's.
func TestRoundTrip(t *testing.T) {
	d := newDoer()
	s := start(t, d, 5*time.Second)
	if st, err := os.Stat(s.Path()); err != nil || st.Mode()&fs.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v (%v), want a socket with mode 0600", st.Mode(), err)
	}
	tests := []struct {
		words   []string
		done    []string
		err     string
		remote  bool
		applied bool
	}{
		{words: []string{"partition", "clientgo"}, done: []string{"did partition_leader clientgo"}, applied: true},
		{words: []string{"slow", "go", "300ms"}, done: []string{"did set_latency go"}, applied: true},
		{words: []string{"partition", "shell"}, err: `partition: STYLE: want a Go style`, remote: true},
		{words: []string{"dance"}, err: `unknown verb "dance"`, remote: true},
		{words: []string{"heal", "runtime"}, err: "no leader: nobody holds the lease of runtime", remote: true, applied: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.words, " "), func(t *testing.T) {
			before := d.performed()
			done, err := Do(t.Context(), s.Path(), tt.words)
			var re *RemoteError
			switch {
			case tt.err == "" && err != nil:
				t.Fatal(err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want %q", err, tt.err)
			case tt.remote && !errors.As(err, &re):
				t.Fatalf("error %T %v, want a RemoteError", err, err)
			}
			if !reflect.DeepEqual(done, tt.done) {
				t.Errorf("done %q, want %q", done, tt.done)
			}
			if got := d.performed() > before; got != tt.applied {
				t.Errorf("performed: %v, want %v", got, tt.applied)
			}
		})
	}
}

// One action at a time: a second request waits for the first; one that
// waits too long, or runs too long, is told so.
func TestOneAtATime(t *testing.T) {
	d := newDoer()
	s := start(t, d, 2*time.Second)
	type result struct {
		done []string
		err  error
	}
	first := make(chan result, 1)
	go func() {
		done, err := Do(context.Background(), s.Path(), []string{"pause", "all"})
		first <- result{done, err}
	}()
	d.waitRunning(t) // the first holds the turn: ask again
	second := make(chan result, 1)
	go func() {
		done, err := Do(context.Background(), s.Path(), []string{"heal", "go"})
		second <- result{done, err}
	}()
	select {
	case r := <-second:
		t.Fatalf("the second ran while the first did: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	d.letGo()
	for _, ch := range []chan result{first, second} {
		select {
		case r := <-ch:
			if r.err != nil || len(r.done) != 1 {
				t.Errorf("%+v", r)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no answer")
		}
	}
	if m := d.most.Load(); m != 1 {
		t.Errorf("%d actions at once, want 1", m)
	}

	d.hold() // never let go: the action times out
	_, err := Do(t.Context(), s.Path(), []string{"pause", "all"})
	if err == nil || !strings.Contains(err.Error(), "not done within 2s") {
		t.Errorf("a stuck action: error %v, want it not done within 2s", err)
	}
}

// Close cancels the action under way, removes the socket, and a client
// then learns nobody answers.
func TestCloseRemovesSocket(t *testing.T) {
	d := newDoer()
	s := start(t, d, time.Minute)
	errc := make(chan error, 1)
	go func() {
		_, err := Do(context.Background(), s.Path(), []string{"pause", "all"})
		errc <- err
	}()
	d.waitRunning(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "the sandbox is stopping") {
		t.Errorf("the action under way at Close: %v, want the sandbox is stopping", err)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket after Close: %v, want it gone", err)
	}
	if _, err := Do(t.Context(), s.Path(), []string{"heal", "go"}); !errors.Is(err, ErrNoServer) {
		t.Errorf("Do after Close: %v, want ErrNoServer", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A socket a killed rlab left is replaced; a path longer than sun_path
// holds is refused, clearly, on both ends.
func TestListenPaths(t *testing.T) {
	path := sockPath(t)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // as a SIGKILL leaves it: the file, nobody listening
	if _, err := Do(t.Context(), path, []string{"heal", "go"}); !errors.Is(err, ErrNoServer) {
		t.Fatalf("Do on a stale socket: %v, want ErrNoServer", err)
	}
	s, err := listen(path, newDoer(), quiet(), time.Second)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	if done, err := Do(t.Context(), path, []string{"heal", "go"}); err != nil || len(done) != 1 {
		t.Errorf("Do: %q, %v", done, err)
	}
	s.Close()

	long := filepath.Join("/tmp", strings.Repeat("x", 100), "control.sock")
	want := fmt.Sprintf("is %d bytes long, and a Unix socket's path may have at most 107: set XDG_STATE_HOME to a shorter directory", len(long))
	if _, err := Listen(long, newDoer(), quiet()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Listen on a long path: %v", err)
	}
	if _, err := Do(t.Context(), long, []string{"heal", "go"}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Do on a long path: %v", err)
	}
}
