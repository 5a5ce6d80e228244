#!/usr/bin/env bash
# Every test, as `make test` runs them: `go test ./...`, then the kind
# passes, alone on the machine: the kind tests of cmd/rlab (signals, the
# screen's q, every lesson on kind), then the sandbox suite on kind, on an
# existing cluster, and on an existing cluster that is a kind cluster.
#
# Not side by side: tried, a kind node beside the envtest suites on two
# cores kept its pods unready for minutes and its etcd timed requests out
# (13 of 16 lessons failed on kind). Both phases run whatever the other
# did, so one run reports every failure; the exit status is non-zero if
# any failed.
#
#   scripts/test-all.sh [go test flags...]
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
flags=("$@")
t0=$SECONDS
failed=()

step() { # step NAME ENV... -- go test args...
  local name=$1 t=$SECONDS env=()
  shift
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  env "${env[@]}" "$GO" test "${flags[@]}" "$@" || failed+=("$name")
  echo "test-all: $name took $((SECONDS - t))s"
}

step "go test ./..." -- ./...
step "kind: cmd/rlab" RLAB_TEST_KIND_PASS=1 -- -run '^TestKind' ./cmd/rlab/
step "kind: sandbox on kind" RLAB_TEST_BACKEND=kind -- ./sim/sandbox/
step "kind: sandbox on an existing cluster" RLAB_TEST_BACKEND=kubeconfig -- ./sim/sandbox/
step "kind: sandbox on an existing kind cluster" RLAB_TEST_BACKEND=kubeconfig RLAB_TEST_HOST=kind -- ./sim/sandbox/

if ((${#failed[@]} > 0)); then
  printf 'test-all: FAILED after %ss: %s\n' "$((SECONDS - t0))" "$(IFS=,; echo "${failed[*]}")"
  exit 1
fi
echo "test-all: every pass succeeded in $((SECONDS - t0))s"
