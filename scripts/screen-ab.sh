#!/usr/bin/env bash
# screen-ab.sh ROUNDS RLAB_BINARY... : compares rlab builds' `rlab up` as a
# student sees it. Each round launches every binary's `rlab up` in a 200x60
# tmux terminal (a tmux server of this script's own), reads the terminal
# every 50 ms, and notes when the three panes are drawn, when the first
# and when all three show Echo/hello 2/2; then quits it (q). The order is
# reversed every other round. Prints each launch, then the medians. Unlike
# `rlab bench`'s main-screen row (rlab marks that itself), this needs no
# mark, so it times builds that predate them too.
set -euo pipefail
rounds=${1:?usage: screen-ab.sh ROUNDS RLAB_BINARY...}
shift
[ $# -gt 0 ] || { echo "usage: screen-ab.sh ROUNDS RLAB_BINARY..." >&2; exit 2; }
sock="screen-ab-$$"
t() { tmux -L "$sock" "$@"; }
trap 't kill-server 2>/dev/null || true' EXIT
declare -A panes first all
now() { date +%s%N; }
ms() { echo $(( ($(now) - $1) / 1000000 )); }
for ((r = 1; r <= rounds; r++)); do
	order=("$@")
	if ((r % 2 == 0)); then
		for ((i = $# - 1, j = 0; i >= 0; i--, j++)); do order[j]=${@:i+1:1}; done
	fi
	for b in "${order[@]}"; do
		st=$(mktemp -d)
		t0=$(now)
		t new-session -d -s ab -x 200 -y 60 "env XDG_STATE_HOME=$st $b up"
		p="" f="" a=""
		while (( ($(now) - t0) < 60000000000 )); do
			s=$(t capture-pane -p -t ab 2>/dev/null || true)
			if [ -z "$p" ] && grep -q 'shell loop.*controller-runtime' <<<"$s"; then p=$(ms "$t0"); fi
			n=$( { grep -o 'Echo/hello 2/2' <<<"$s" || true; } | wc -l)
			if [ -n "$p" ] && [ -z "$f" ] && [ "$n" -ge 1 ]; then f=$(ms "$t0"); fi
			if [ "$n" -ge 3 ]; then a=$(ms "$t0"); break; fi
			sleep 0.05
		done
		t send-keys -t ab q
		for _ in $(seq 150); do t has-session -t ab 2>/dev/null || break; sleep 0.2; done
		t kill-session -t ab 2>/dev/null || true
		rm -rf "$st"
		panes[$b]+="$p " first[$b]+="$f " all[$b]+="$a "
		echo "round $r  $b  panes ${p:-?} ms  first 2/2 ${f:-?} ms  all 2/2 ${a:-?} ms"
		sleep 2
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {if (NR == 0) {printf "?"; exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f", m/1000}'; }
for b in "$@"; do
	echo "median  $b  panes $(echo "${panes[$b]}" | median) s  first 2/2 $(echo "${first[$b]}" | median) s  all 2/2 $(echo "${all[$b]}" | median) s"
done
