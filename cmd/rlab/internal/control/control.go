// Package control is how `rlab do` reaches the running rlab: a Unix socket
// in the state dir (state.Dir.Control), one JSON Request per connection
// (the words typed after rlab do), one JSON Answer (what was done, or the
// error). The server performs one action at a time, each within Timeout.
//
//	srv, err := control.Listen(d.Control(), actions.NewActor(sb), log)
//	defer srv.Close()
//	done, err := control.Do(ctx, d.Control(), []string{"partition", "clientgo"})
package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// Request is what rlab do sends: the words typed after it.
type Request struct {
	Words []string `json:"words"`
}

// Answer is what the server says back: what it did, one line each, or why
// it did not.
type Answer struct {
	Done  []string `json:"done,omitempty"`
	Error string   `json:"error,omitempty"`
}

// Doer reads and performs what a student typed after rlab do
// (actions.Actor). The protocol carries words: it knows no course.
type Doer interface {
	// Prepare reads words as a verb; its error says what is wrong and how
	// the verb is typed. The Act it returns performs it.
	Prepare(words []string) (Act, error)
}

// Act performs one verb and says what it did, one line per thing done. An
// alias, so that a Doer returns a plain func and imports nothing of this.
type Act = func(ctx context.Context) ([]string, error)

// Timeout bounds an action (a partition waits up to a minute for a leader
// to cut off; ship builds an image, a first build of every dependency for
// linux without cgo, and waits for its pod), and the wait for the one
// before it to end.
const Timeout = 3 * time.Minute

const (
	// maxPath is the longest path a Unix socket may have: sun_path is 108
	// bytes, with its NUL.
	maxPath = 107
	// maxRequest bounds a request: a few words.
	maxRequest = 64 << 10
	// maxConns bounds the connections waiting for their turn, so that a
	// runaway script cannot pile up goroutines.
	maxConns = 16
	// ioTimeout bounds reading a request and writing an answer.
	ioTimeout = 10 * time.Second
)

// CheckPath says why path cannot be a Unix socket, or nil.
func CheckPath(path string) error {
	if len(path) > maxPath {
		return fmt.Errorf("the control socket %s is %d bytes long, and a Unix socket's path may have at most %d: "+
			"set XDG_STATE_HOME to a shorter directory", path, len(path), maxPath)
	}
	return nil
}

// Server takes rlab do's requests on a Unix socket until Close.
type Server struct {
	path    string
	ln      net.Listener
	doer    Doer
	log     *slog.Logger
	timeout time.Duration

	turn  chan struct{} // holds a token while an action runs
	conns chan struct{} // a token per open connection
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	once  sync.Once
}

// Listen serves rlab do on the socket path (0600), replacing a stale one a
// killed rlab left: the caller holds the state dir, so none other is live.
func Listen(path string, d Doer, log *slog.Logger) (*Server, error) {
	return listen(path, d, log, Timeout)
}

func listen(path string, d Doer, log *slog.Logger, timeout time.Duration) (*Server, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove stale control socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background()) // until Close
	s := &Server{path: path, ln: ln, doer: d, log: log, timeout: timeout,
		turn: make(chan struct{}, 1), conns: make(chan struct{}, maxConns), ctx: ctx, stop: stop}
	s.wg.Go(s.accept)
	return s, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops taking requests, cancels the action under way, waits for the
// connections to end and removes the socket. Later calls do nothing.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		s.stop()
		err = s.ln.Close() // removes the socket file too
		s.wg.Wait()
		if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	})
	return err
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Error("control socket", "err", err)
			}
			return
		}
		select {
		case s.conns <- struct{}{}:
		default:
			s.answer(c, Answer{Error: fmt.Sprintf("busy: %d rlab do commands are waiting already; try again when they are done", maxConns)})
			c.Close()
			continue
		}
		s.wg.Go(func() {
			defer func() { <-s.conns }()
			defer c.Close()
			s.serve(c)
		})
	}
}

// serve answers one connection's request.
func (s *Server) serve(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(ioTimeout))
	var req Request
	if err := json.NewDecoder(bufio.NewReader(io.LimitReader(c, maxRequest))).Decode(&req); err != nil {
		s.answer(c, Answer{Error: fmt.Sprintf("unreadable request: %v", err)})
		return
	}
	t0 := time.Now()
	done, err := s.do(req.Words)
	a := Answer{Done: done}
	if err != nil {
		a.Error = err.Error()
	}
	s.log.Info("rlab do", "words", strings.Join(req.Words, " "), "took", time.Since(t0), "done", done, "err", a.Error)
	s.answer(c, a)
}

// do performs the request's action, in its turn.
func (s *Server) do(words []string) ([]string, error) {
	act, err := s.doer.Prepare(words)
	if err != nil {
		return nil, err
	}
	wait := time.NewTimer(s.timeout)
	defer wait.Stop()
	select {
	case s.turn <- struct{}{}:
		defer func() { <-s.turn }()
	case <-wait.C:
		return nil, fmt.Errorf("busy: another rlab do has run for over %s; try again", s.timeout)
	case <-s.ctx.Done():
		return nil, errors.New("the sandbox is stopping")
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	done, err := act(ctx)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return done, fmt.Errorf("not done within %s: %w", s.timeout, err)
	case s.ctx.Err() != nil && err != nil:
		return done, fmt.Errorf("the sandbox is stopping: %w", err)
	}
	return done, err
}

func (s *Server) answer(c net.Conn, a Answer) {
	_ = c.SetWriteDeadline(time.Now().Add(ioTimeout))
	if err := json.NewEncoder(c).Encode(a); err != nil {
		s.log.Warn("rlab do: answer", "err", err)
	}
}

// ErrNoServer is a socket nobody answers on: the sandbox is still
// starting, or the rlab that runs it is older than rlab do.
var ErrNoServer = errors.New("no rlab answers on the control socket")

// RemoteError is the server's refusal or failure, as it said it.
type RemoteError struct{ Msg string }

func (e *RemoteError) Error() string { return e.Msg }

// Do asks the rlab serving path to perform words, and returns what it did.
// An error is ErrNoServer (wrapped) if nobody answers, *RemoteError if the
// server said no.
func Do(ctx context.Context, path string, words []string) ([]string, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoServer, err)
	}
	defer c.Close()
	// The server bounds the wait for its turn and the action, each by Timeout.
	_ = c.SetDeadline(time.Now().Add(2*Timeout + 2*ioTimeout))
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	if err := json.NewEncoder(c).Encode(Request{Words: words}); err != nil {
		return nil, fmt.Errorf("send to rlab: %w", err)
	}
	var a Answer
	if err := json.NewDecoder(bufio.NewReader(io.LimitReader(c, maxRequest))).Decode(&a); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("read rlab's answer: %w", err)
	}
	if a.Error != "" {
		return a.Done, &RemoteError{Msg: a.Error}
	}
	return a.Done, nil
}
