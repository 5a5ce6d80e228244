#!/usr/bin/env bash
# Every test, as `make test` runs them: `go test ./...` and, beside it, the
# kind passes (the lessons on kind, then the sandbox suite on kind, on an
# existing cluster, and on an existing cluster that is a kind cluster).
#
# Side by side because most of both is waiting (on lessons, leases, pods)
# and the machine has two cores: one after the other they took 38 and 25
# minutes. Kind clusters still come one at a time: every kind test holds the
# machine's kind lock (sim/cluster/kindtest), so the kind tests inside
# `go test ./...` and these take turns.
#
# `go test ./...` runs at nice 5: the lessons on a kind node have bounds
# (lesson 8's takeover after SIGTERM: 4s) that two clean-clone CIs saw
# missed when the envtest suites beside them had an equal share of the CPU.
#
# The kind passes' output is kept in a file and printed, whole, after
# `go test ./...`'s, so neither interleaves with the other. Exits non-zero if
# either failed; both always run to the end.
#
#   scripts/test-all.sh [go test flags...]
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
flags=("$@")

kind_log=$(mktemp "${TMPDIR:-/tmp}/rlab-kind-passes.XXXXXX")
trap 'rm -f "$kind_log"' EXIT

kind_passes() {
  set -e
  RLAB_TEST_KIND_LESSONS=1 "$GO" test "${flags[@]}" -run '^TestKindLessonsVerify$' ./cmd/rlab/
  RLAB_TEST_BACKEND=kind "$GO" test "${flags[@]}" ./sim/sandbox/
  RLAB_TEST_BACKEND=kubeconfig "$GO" test "${flags[@]}" ./sim/sandbox/
  RLAB_TEST_BACKEND=kubeconfig RLAB_TEST_HOST=kind "$GO" test "${flags[@]}" ./sim/sandbox/
}

t0=$SECONDS
# The kind passes stay in this script's process group: a Ctrl-C (or a CI
# runner stopping the group) stops both.
kind_passes >"$kind_log" 2>&1 &
kind_pid=$!

nice -n 5 "$GO" test "${flags[@]}" ./...
main=$?
echo "test-all: go test ./... exited $main after $((SECONDS - t0))s; waiting for the kind passes"
wait "$kind_pid"
kind=$?
echo "test-all: the kind passes (run beside go test ./...) exited $kind after $((SECONDS - t0))s; their output:"
cat "$kind_log"
echo "test-all: go test ./... exited $main, the kind passes $kind, after $((SECONDS - t0))s"
((main == 0 && kind == 0))
