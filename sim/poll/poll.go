// Package poll is the one way rlab waits for something nothing tells it
// about: a condition asked again and again, with a deadline, never a sleep.
package poll

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Cond says whether what is waited for has come. Its error does not end the
// wait (while something starts, errors are the usual answer) unless it is
// Final; the last one is named if the wait runs out.
type Cond func(ctx context.Context) (bool, error)

// Until asks cond at once and then every `every` until it says true, ctx
// ends or timeout passes. The error names what (if not empty), wraps
// context.DeadlineExceeded when the time ran out, and quotes cond's last
// error.
func Until(ctx context.Context, every, timeout time.Duration, what string, cond Cond) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, every, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		var f final
		if errors.As(err, &f) {
			return false, f.err
		}
		last = err
		return ok, nil
	})
	switch {
	case err == nil:
		return nil
	case what == "" && last != nil:
		return fmt.Errorf("%w (last error: %v)", err, last)
	case what == "":
		return err
	case last != nil:
		return fmt.Errorf("waiting for %s: %w (last error: %v)", what, err, last)
	}
	return fmt.Errorf("waiting for %s: %w", what, err)
}

// Final wraps an error that ends the wait at once; Until returns it
// (unwrapped, prefixed with what).
func Final(err error) error {
	if err == nil {
		return nil
	}
	return final{err}
}

type final struct{ err error }

func (f final) Error() string { return f.err.Error() }
func (f final) Unwrap() error { return f.err }

// True adapts a condition that cannot fail.
func True(cond func() bool) Cond {
	return func(context.Context) (bool, error) { return cond(), nil }
}

// Sleep waits d, or until ctx ends (its error): a pause that is part of
// what is done (the space between two acts), not a wait for a condition.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
