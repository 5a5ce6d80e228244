package poll

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		what     string
		cond     func(n int) (bool, error)
		wantErr  string // "" for success
		deadline bool   // the error wraps context.DeadlineExceeded
		final    bool   // the error wraps boom and the wait stopped early
	}{
		{name: "at once", cond: func(int) (bool, error) { return true, nil }},
		{name: "third time", cond: func(n int) (bool, error) { return n == 3, nil }},
		{name: "after errors", cond: func(n int) (bool, error) {
			if n < 3 {
				return false, boom
			}
			return true, nil
		}},
		{name: "never", what: "the pods", cond: func(int) (bool, error) { return false, nil },
			wantErr: "waiting for the pods: context deadline exceeded", deadline: true},
		{name: "never, says why", what: "the pods", cond: func(int) (bool, error) { return false, errors.New("2 of 3 ready") },
			wantErr: "waiting for the pods: context deadline exceeded (last error: 2 of 3 ready)", deadline: true},
		{name: "never, unnamed", cond: func(int) (bool, error) { return false, errors.New("2 of 3 ready") },
			wantErr: "context deadline exceeded (last error: 2 of 3 ready)", deadline: true},
		{name: "final error", what: "the pods", cond: func(int) (bool, error) { return false, Final(boom) },
			wantErr: "waiting for the pods: boom", final: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			start := time.Now()
			err := Until(t.Context(), time.Millisecond, 100*time.Millisecond, tt.what, func(context.Context) (bool, error) {
				n++
				return tt.cond(n)
			})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Until = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Until = %v, want %q", err, tt.wantErr)
			}
			if got := errors.Is(err, context.DeadlineExceeded); got != tt.deadline {
				t.Fatalf("errors.Is(err, DeadlineExceeded) = %v, want %v", got, tt.deadline)
			}
			if tt.final && (!errors.Is(err, boom) || n != 1 || time.Since(start) > 50*time.Millisecond) {
				t.Fatalf("a final error ends the wait: %d asks in %s, is boom: %v", n, time.Since(start), errors.Is(err, boom))
			}
		})
	}
}

func TestUntilEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := Until(ctx, time.Millisecond, time.Minute, "", True(func() bool { return false }))
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "waiting for") {
		t.Fatalf("Until on a cancelled context = %v, want context.Canceled", err)
	}
}

func TestSleep(t *testing.T) {
	start := time.Now()
	if err := Sleep(context.Background(), 50*time.Millisecond); err != nil || time.Since(start) < 50*time.Millisecond {
		t.Errorf("Sleep(50ms) = %v after %s", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	if err := Sleep(ctx, time.Minute); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Errorf("Sleep in an ended context = %v after %s, want context.Canceled at once", err, time.Since(start))
	}
}
