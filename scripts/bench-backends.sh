#!/usr/bin/env bash
# Measures the sandbox on envtest and on kind in one run and prints one table:
# start-up, edit → converged, drift repair, Echo GC and leader failover, per
# style. The backends alternate (envtest, kind, envtest, kind, ...) so that
# drift in this shared machine's speed hits both; the table gives each
# metric's median over the rounds and the kind/envtest ratio.
#
#   scripts/bench-backends.sh [ROUNDS]     (default 2; make bench-backends)
#
# Needs the control plane (make assets) and, for kind, Docker and the node
# image (make kind-image).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

rounds=${1:-2}
benches=${RLAB_BENCH:-'Startup|EditConverge|DriftRepair|EchoGC|Failover'}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

go test -c -o "$out/sandbox.test" ./sim/sandbox/
for ((r = 1; r <= rounds; r++)); do
	for backend in envtest kind; do
		echo "round $r/$rounds: $backend ..." >&2
		(cd sim/sandbox && RLAB_TEST_BACKEND=$backend RLAB_REQUIRE_KIND=1 "$out/sandbox.test" -test.run '^$' \
			-test.bench "$benches" -test.benchtime 1x -test.timeout 40m) >"$out/$backend.$r.txt" 2>&1 || {
			echo "bench on $backend failed; its output:" >&2
			cat "$out/$backend.$r.txt" >&2
			exit 1
		}
	done
done

# Every "value unit" pair of every Benchmark line, but ns/op.
for f in "$out"/envtest.*.txt "$out"/kind.*.txt; do
	b=$(basename "$f" | cut -d. -f1)
	awk -v b="$b" '/^Benchmark/ { for (i = 3; i < NF; i += 2) if ($(i+1) != "ns/op") print $(i+1), b, $i }' "$f"
done | sort -k1,1 -k2,2 -k3,3g | awk -v rounds="$rounds" '
function median(arr, n) { return (n % 2) ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2 }
{
	key = $1; if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
	n = ++cnt[key, $2]; val[key, $2, n] = $3
}
END {
	printf "%-42s %12s %12s %8s   (median of %d rounds each, alternated)\n", "metric", "envtest", "kind", "kind/env", rounds
	for (k = 1; k <= nk; k++) {
		key = order[k]
		for (bi = 1; bi <= 2; bi++) {
			b = bi == 1 ? "envtest" : "kind"; n = cnt[key, b]
			delete a; for (i = 1; i <= n; i++) a[i] = val[key, b, i]
			m[b] = n ? median(a, n) : -1
		}
		ratio = (m["envtest"] > 0 && m["kind"] >= 0) ? sprintf("%.2f", m["kind"] / m["envtest"]) : "-"
		printf "%-42s %12s %12s %8s\n", key, (m["envtest"] < 0 ? "-" : sprintf("%.1f", m["envtest"])), (m["kind"] < 0 ? "-" : sprintf("%.1f", m["kind"])), ratio
	}
}'
