#!/usr/bin/env bash
# startup-ab.sh ROUNDS RLAB_BINARY... : compares rlab builds' start-up, as a
# user meets it. Each round launches every binary's `run --operators none`
# in a state dir of its own, timed to its "cluster ready in" line, and, with
# $RLAB_KWOKCTL, kwokctl's bare cluster from the same control-plane binaries,
# timed to its exit; the order is reversed every other round. With
# AB_LESSON=1 each binary runs `lesson start 1 --text --from-start` instead,
# timed to lesson 1's step 1 shown. Prints each launch, then the medians. Builds of two commits compare before and after:
#   git worktree add /tmp/before REV && (cd /tmp/before && go build -o /tmp/rlab-before ./cmd/rlab)
#   scripts/startup-ab.sh 8 /tmp/rlab-before ./bin/rlab
set -euo pipefail
rounds=${1:?usage: startup-ab.sh ROUNDS RLAB_BINARY...}
shift
[ $# -gt 0 ] || { echo "usage: startup-ab.sh ROUNDS RLAB_BINARY..." >&2; exit 2; }
assets=${RLAB_ASSETS:-${XDG_CACHE_HOME:-$HOME/.cache}/rlab/controlplane/v1.36.3}
runs=("$@")
if [ -n "${RLAB_KWOKCTL:-}" ] && [ -z "${AB_LESSON:-}" ]; then runs+=(kwokctl); fi
declare -A times

now() { date +%s%N; }

# rlab BINARY: seconds from launch to the "cluster ready in" line.
rlab() {
	local st t0 line secs=""
	st=$(mktemp -d)
	t0=$(now)
	if [ -n "${AB_LESSON:-}" ]; then
		coproc R { exec env XDG_STATE_HOME="$st" "$1" lesson start 1 --text --from-start 2>/dev/null; }
	else
		coproc R { exec env XDG_STATE_HOME="$st" "$1" run --operators none 2>&1 >/dev/null; }
	fi
	local pid=$R_PID
	while IFS= read -r -u "${R[0]}" line; do
		if [[ $line == "cluster ready in "* || ( -n "${AB_LESSON:-}" && $line == *"step 1 of"* ) ]]; then
			secs=$(( ($(now) - t0) / 1000000 ))
			break
		fi
	done
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" || true
	rm -rf "$st"
	[ -n "$secs" ] || { echo "$1: it never said it was ready (a line it prints: cluster ready in, or step 1 of)" >&2; return 1; }
	echo "$secs"
}

# kwokctl: seconds from launch to the exit of create --wait.
kwok() {
	local name="ab-$$" kc t0 ms
	kc=$(mktemp)
	t0=$(now)
	"$RLAB_KWOKCTL" create cluster --name "$name" --runtime binary --wait 2m --kubeconfig "$kc" \
		--etcd-binary "$assets/etcd" --kube-apiserver-binary "$assets/kube-apiserver" \
		--kube-controller-manager-binary "$assets/kube-controller-manager" \
		--kube-scheduler-binary "$assets/kube-scheduler" --kwok-controller-binary "$assets/kwok" >/dev/null 2>&1
	ms=$(( ($(now) - t0) / 1000000 ))
	"$RLAB_KWOKCTL" delete cluster --name "$name" --kubeconfig "$kc" >/dev/null 2>&1
	rm -f "$kc"
	echo "$ms"
}

for ((r = 1; r <= rounds; r++)); do
	order=("${runs[@]}")
	if ((r % 2 == 0)); then
		for ((i = ${#runs[@]} - 1, j = 0; i >= 0; i--, j++)); do order[j]=${runs[i]}; done
	fi
	for b in "${order[@]}"; do
		if [ "$b" = kwokctl ]; then ms=$(kwok); else ms=$(rlab "$b"); fi
		times[$b]+="$ms "
		awk -v r="$r" -v b="$b" -v ms="$ms" 'BEGIN {printf "round %d  %-40s %5.2f s\n", r, b, ms / 1000}'
		sleep 1
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f", m/1000}'; }
for b in "${runs[@]}"; do
	printf 'median  %-40s %s s  (%s)\n' "$b" "$(echo "${times[$b]}" | median)" "${times[$b]% }"
done
