#!/usr/bin/env bash
# The long tier, as `make test` runs it after the fast one (`make
# test-unit`): `go test` of every package holding a test that needs the
# control plane (simtest.NeedsControlPlane; the rest of their tests run
# again, those of other packages ran in the fast tier alone), then the kind
# passes, without the envtest suites beside them, in two streams side by
# side: the kind tests of cmd/rlab (signals, the screen's q, every lesson on
# kind), and the sandbox suite on kind, on an existing cluster, and on an
# existing cluster that is a kind cluster, then cmd/rlab's shipping tests.
#
# Not beside `go test ./...`: tried, a kind node beside the envtest suites
# on two cores kept its pods unready for minutes and its etcd timed
# requests out (13 of 16 lessons failed on kind). The two kind streams
# leave a core to each other: alone, one after the other, they left the
# machine a third idle. Every pass runs whatever the others did, so one
# run reports every failure; the exit status is non-zero if any failed.
#
#   scripts/test-all.sh [go test flags...]
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
flags=("$@")
t0=$SECONDS
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

step() { # step NAME ENV... -- go test args...; records a failure in $logs
  local name=$1 t=$SECONDS env=()
  shift
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  env "${env[@]}" "$GO" test "${flags[@]}" "$@" || echo "$name" >>"$logs/failed"
  echo "test-all: $name took $((SECONDS - t))s"
}

# ./testdata holds operators rlab checks, not rlab's tests.
mapfile -t long < <(grep -rlE --include='*_test.go' --exclude-dir=testdata 'simtest\.NeedsControlPlane\(' . | xargs -n1 dirname | sort -u)
if [[ ${#long[@]} -lt 8 ]]; then
  echo "test-all: only ${#long[@]} packages hold a test that needs the control plane (${long[*]}): the search for simtest.NeedsControlPlane broke" >&2
  exit 1
fi
echo "test-all: the long tier's packages: ${long[*]}"
step "go test (the long tier)" -- "${long[@]}"

# The second stream writes to a file, printed whole when both are done:
# two go test -v streams interleaved line by line could not be read.
# Each stream holds a kind test lock of its own (kindtest.LockEnv), so the
# two are not kept to one kind cluster at a time.
# The shipping tests of cmd/rlab (rlab check --ship, lesson 23 by hand) and
# every third lesson on kind (TestKindLessonsVerify's part b) run in this
# stream, the rest of the lessons in the other: with every lesson on kind,
# the other stream took 1092 s in the clean-clone CI of a3ad709, and this
# one 408 s in that of 5f27b17.
sandboxes() {
  local lock=RLAB_KIND_TEST_LOCK=kind-test-sandbox
  step "kind: sandbox on kind" "$lock" RLAB_TEST_BACKEND=kind -- ./sim/sandbox/
  step "kind: sandbox on an existing cluster" "$lock" RLAB_TEST_BACKEND=kubeconfig -- ./sim/sandbox/
  step "kind: sandbox on an existing kind cluster" "$lock" RLAB_TEST_BACKEND=kubeconfig RLAB_TEST_HOST=kind -- ./sim/sandbox/
  step "kind: cmd/rlab's shipping" "$lock" RLAB_TEST_KIND_PASS=1 -- -run '^TestKindShip' ./cmd/rlab/
  step "kind: every third lesson" "$lock" RLAB_TEST_KIND_PASS=1 RLAB_KIND_LESSONS=b -- -run '^TestKindLessonsVerify$' ./cmd/rlab/
}
t=$SECONDS
sandboxes >"$logs/sandboxes.out" 2>&1 &
other=$!
step "kind: cmd/rlab" RLAB_KIND_TEST_LOCK=kind-test-rlab RLAB_TEST_KIND_PASS=1 RLAB_KIND_LESSONS=a -- -run '^TestKind' -skip '^TestKindShip' ./cmd/rlab/
wait "$other"
echo "test-all: the sandbox suites' kind passes, run beside kind: cmd/rlab:"
cat "$logs/sandboxes.out"
echo "test-all: the kind passes took $((SECONDS - t))s"

if [[ -s $logs/failed ]]; then
  printf 'test-all: FAILED after %ss: %s\n' "$((SECONDS - t0))" "$(paste -sd, "$logs/failed")"
  exit 1
fi
echo "test-all: every pass succeeded in $((SECONDS - t0))s"
