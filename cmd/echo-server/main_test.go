package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/sim/simtest"
)

func TestAnswersEveryPathWithText(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, "hello, operators") }()
	for _, path := range []string{"/", "/healthz", "/any/thing?x=1"} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "hello, operators\n" {
			t.Errorf("GET %s = %d %q, want 200 %q", path, resp.StatusCode, b, "hello, operators\n")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no text", []string{"-listen=127.0.0.1:0"}, "-text is required"},
		{"empty text is text", []string{"-text=", "-listen=256.0.0.1:1"}, "listen:"},
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
		{"bad listen", []string{"-text=x", "-listen=256.0.0.1:1"}, "listen:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestExitsAtOnceOnSIGTERM runs the real binary: a pod's container must stop
// when the kubelet asks, not after the grace period.
func TestExitsAtOnceOnSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "echo-server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "-text=bye", "-listen="+addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var body string
	if err := simtest.Poll(t.Context(), 20*time.Second, func(ctx context.Context) (bool, error) {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err == nil, err
	}); err != nil {
		t.Fatalf("echo-server never answered on %s: %v", addr, err)
	}
	if body != "bye\n" {
		t.Fatalf("answer %q, want %q", body, "bye\n")
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v to exit after SIGTERM", took)
	}
}
