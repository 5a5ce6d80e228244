#!/usr/bin/env bash
# Makes a Docker engine available for the kind backend and its tests:
#   - nothing to do when `docker info` already answers;
#   - as root, installs Debian's docker.io (and jq) when dockerd is missing and
#     starts dockerd in the background (these machines have no systemd);
#   - checks that a privileged container starts; where the host withholds a
#     capability that --privileged asks for, restarts the dockerd it started
#     with scripts/runc-capshim.sh as its default runtime, and checks again
#     (a dockerd it did not start is never stopped: it says what to add).
# Prints one line per step; exits non-zero with the reason if Docker cannot run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log=${RLAB_DOCKERD_LOG:-/var/log/rlab-dockerd.log}
shim_dst=/usr/local/lib/rlab/runc-capshim

say() { echo "setup-docker: $*"; }
die() { echo "setup-docker: $*" >&2; exit 1; }

as_root() { if [[ $(id -u) == 0 ]]; then "$@"; else sudo -n "$@"; fi; }

wait_docker() {
	for _ in $(seq 1 60); do
		docker info >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	return 1
}

start_dockerd() { # extra dockerd flags...
	say "starting dockerd $* (log: $log)"
	# setsid: dockerd outlives this script and is nobody's child to kill on exit.
	as_root setsid dockerd "$@" >>"$log" 2>&1 </dev/null &
	wait_docker || die "dockerd did not answer within 30 s; see $log"
	started_pid=$(cat /var/run/docker.pid 2>/dev/null || true)
}

started_pid="" # the dockerd this script started, the only one it may stop

stop_our_dockerd() {
	local pid=$started_pid
	[[ -n "$pid" ]] || die "privileged containers fail under a dockerd this script did not start; restart it with --add-runtime rlab-capshim=$shim_dst --default-runtime rlab-capshim (install $shim_dst from scripts/runc-capshim.sh)"
	say "stopping the dockerd started above (pid $pid) to register the capability shim"
	as_root kill "$pid"
	for _ in $(seq 1 60); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.5
	done
	die "dockerd (pid $pid) did not stop"
}

# privileged_ok runs a privileged container of a one-file image built here
# (no registry needed): tini from docker.io, which is static.
privileged_ok() {
	local init ok=0
	init=$(command -v docker-init) || die "docker-init (tini, part of docker.io) is missing: cannot make a test image"
	tar -C "$(dirname "$(readlink -f "$init")")" --transform 's|.*|init|' -c "$(basename "$(readlink -f "$init")")" |
		docker import - rlab-probe:1 >/dev/null
	docker run --rm --privileged rlab-probe:1 /init --version >/dev/null 2>"${1:-/dev/null}" || ok=1
	docker image rm rlab-probe:1 >/dev/null 2>&1 || true
	return $ok
}

if ! docker info >/dev/null 2>&1; then
	if ! command -v dockerd >/dev/null; then
		[[ $(id -u) == 0 ]] || die "Docker is not installed and this is not root: install Docker (or run as root) to enable the kind backend"
		say "installing docker.io and jq from Debian"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io jq >/dev/null
	fi
	start_dockerd
fi
say "docker $(docker version --format '{{.Server.Version}}') answers"

err=$(mktemp)
trap 'rm -f "$err"' EXIT
if privileged_ok "$err"; then
	say "privileged containers start"
	exit 0
fi
grep -q "apply caps" "$err" || die "a privileged container fails: $(cat "$err")"
say "privileged containers fail here ($(grep -o 'unable to apply caps[^"]*' "$err" | head -1)): registering the capability shim"
command -v jq >/dev/null || as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null
as_root install -D -m 0755 "$here/runc-capshim.sh" "$shim_dst"
stop_our_dockerd
start_dockerd --add-runtime "rlab-capshim=$shim_dst" --default-runtime rlab-capshim
privileged_ok "$err" || die "a privileged container still fails with the shim: $(cat "$err")"
say "privileged containers start (with the capability shim)"
