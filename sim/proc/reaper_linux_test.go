package proc

import (
	"testing"

	"golang.org/x/sys/unix"
)

// adoptOrphans makes the test process the reaper of whatever its helpers
// leave behind, in its own session. The kernel then never sends SIGHUP and
// SIGCONT to a stopped group the helper orphans (its new parent shares the
// session), so the lifeline alone must do the killing, however the machine's
// init is set up.
func adoptOrphans(t *testing.T) {
	t.Helper()
	if err := setReaper(1); err != nil {
		t.Fatalf("become a subreaper: %v", err)
	}
	t.Cleanup(func() { _ = setReaper(0) })
}

func setReaper(on uintptr) error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, on, 0, 0, 0)
}
