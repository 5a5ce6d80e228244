// Command echo-server is the Echo workload rlab ships for clusters with no
// registry: it answers every HTTP request with -text, like hashicorp/http-echo
// (same flags, same default port), and exits at once on SIGTERM so a rollout
// never waits out a grace period. rlab builds it into a one-file image and
// loads it into the kind node.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "echo-server:", err)
		os.Exit(2)
	}
}

// run serves until ctx ends or SIGTERM/SIGINT arrives.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("echo-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	text := fs.String("text", "", "text to answer every request with (required)")
	listen := fs.String("listen", ":5678", "address and port to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Required, but may be empty: an Echo's message can be "", and its pods
	// must not crash-loop for it.
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "text" })
	if !given {
		return errors.New("-text is required")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	log.Info("serving", "addr", ln.Addr().String(), "text", *text)
	return serve(ctx, ln, *text)
}

// serve answers on ln until ctx ends; then it closes at once, not gracefully:
// an echo has no request worth finishing.
func serve(ctx context.Context, ln net.Listener, text string) error {
	srv := &http.Server{Handler: handler(text)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		_ = srv.Close()
		return nil
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	}
}

func handler(text string) http.Handler {
	body := []byte(text + "\n")
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-App-Name", "echo-server")
		_, _ = w.Write(body)
	})
}
