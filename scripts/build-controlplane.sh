#!/usr/bin/env bash
# Builds the pinned control plane (kube-apiserver, etcd, kube-controller-manager,
# kube-scheduler, kubectl, kwok) from Go modules into a per-user cache, so the
# sandbox needs no Docker and no download beyond the Go module proxy.
#
#   scripts/build-controlplane.sh            build what is missing or stale
#   scripts/build-controlplane.sh kubelet kubeadm
#                                            build just the named binaries (the
#                                            node binaries kubelet and kubeadm are
#                                            built only when named)
#   RLAB_ASSETS=/dir scripts/...             build into /dir instead of the cache
#
# Idempotent: each binary carries a stamp of the inputs it was built from
# (go.mod, go.sum, this script, the Go version); a binary whose stamp matches is
# not rebuilt. Atomic: each binary is built under a temporary name and renamed,
# so an interrupted build never leaves a binary that looks complete.
set -euo pipefail

readonly KUBE_VERSION=v1.36.3
readonly KWOK_VERSION=v0.8.0
readonly GO_MIN_MINOR=26 # go 1.26, what k8s.io/kubernetes v1.36 declares

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module="$here/controlplane"
out=${RLAB_ASSETS:-${XDG_CACHE_HOME:-$HOME/.cache}/rlab/controlplane/$KUBE_VERSION}

die() { echo "build-controlplane: $*" >&2; exit 1; }

command -v go >/dev/null 2>&1 ||
	die "Go is not installed or not on PATH; install Go 1.$GO_MIN_MINOR or newer (https://go.dev/dl)"
gov=$(go env GOVERSION) # e.g. go1.26.8
minor=$(sed -E 's/^go1\.([0-9]+).*/\1/' <<<"$gov")
[[ "$minor" =~ ^[0-9]+$ ]] || die "cannot read the Go version from '$gov'"
((minor >= GO_MIN_MINOR)) ||
	die "Go $gov is too old: k8s.io/kubernetes $KUBE_VERSION needs Go 1.$GO_MIN_MINOR or newer"

mkdir -p "$out"

stamp=$({
	cat "$module/go.mod" "$module/go.sum" "${BASH_SOURCE[0]}"
	echo "$gov"
} | sha256sum | cut -c1-16)

major=${KUBE_VERSION#v}
major=${major%%.*}
kminor=${KUBE_VERSION#v*.}
kminor=${kminor%%.*}
kube_ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION \
 -X k8s.io/component-base/version.gitMajor=$major \
 -X k8s.io/component-base/version.gitMinor=$kminor \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION \
 -X k8s.io/client-go/pkg/version.gitMajor=$major \
 -X k8s.io/client-go/pkg/version.gitMinor=$kminor"
kwok_ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} \
 -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBE_VERSION#v}"

# name|package|ldflags, in the order the sandbox needs them. Built by default.
all_targets=(
	"kube-apiserver|k8s.io/kubernetes/cmd/kube-apiserver|$kube_ldflags"
	"etcd|./etcd|-s -w"
	"kube-controller-manager|k8s.io/kubernetes/cmd/kube-controller-manager|$kube_ldflags"
	"kube-scheduler|k8s.io/kubernetes/cmd/kube-scheduler|$kube_ldflags"
	"kubectl|k8s.io/kubernetes/cmd/kubectl|$kube_ldflags"
	"kwok|sigs.k8s.io/kwok/cmd/kwok|$kwok_ldflags"
)
# Built only when named: what a kind node needs besides the above.
extra_targets=(
	"kubelet|k8s.io/kubernetes/cmd/kubelet|$kube_ldflags"
	"kubeadm|k8s.io/kubernetes/cmd/kubeadm|$kube_ldflags"
)

targets=()
if (($# == 0)); then
	targets=("${all_targets[@]}")
else
	for want in "$@"; do
		found=""
		for t in "${all_targets[@]}" "${extra_targets[@]}"; do
			if [[ "${t%%|*}" == "$want" ]]; then
				targets+=("$t")
				found=1
			fi
		done
		if [[ -z "$found" ]]; then
			names=""
			for t in "${all_targets[@]}" "${extra_targets[@]}"; do names+=" ${t%%|*}"; done
			die "unknown binary '$want'; known:$names"
		fi
	done
fi

fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

tmp=""
heartbeat=""
cleanup() {
	[[ -n "$heartbeat" ]] && kill "$heartbeat" 2>/dev/null || true
	[[ -n "$tmp" ]] && rm -f "$tmp"
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

total_start=$SECONDS
built=0
n=${#targets[@]}
i=0
for t in "${targets[@]}"; do
	i=$((i + 1))
	IFS='|' read -r name pkg ldflags <<<"$t"
	bin="$out/$name"
	if [[ -x "$bin" && -f "$bin.stamp" && "$(cat "$bin.stamp")" == "$stamp" ]]; then
		echo "[$i/$n] $name: up to date"
		continue
	fi
	echo "[$i/$n] $name: building $pkg ..."
	start=$SECONDS
	# A quiet go build can last minutes on a cold cache; say it is still alive.
	# (sleep writes nowhere: left behind by kill, it must not hold a pipe open.)
	(
		while sleep 30 >/dev/null 2>&1; do echo "[$i/$n] $name: still building ($(fmt_secs $((SECONDS - start))))"; done
	) &
	heartbeat=$!
	tmp=$(mktemp "$out/.$name.XXXXXX")
	(cd "$module" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg") ||
		die "go build of $name failed (package $pkg)"
	kill "$heartbeat" 2>/dev/null || true
	wait "$heartbeat" 2>/dev/null || true
	heartbeat=""
	chmod 0755 "$tmp"
	mv -f "$tmp" "$bin"
	tmp=""
	echo "$stamp" >"$bin.stamp.tmp" && mv -f "$bin.stamp.tmp" "$bin.stamp"
	built=$((built + 1))
	echo "[$i/$n] $name: built in $(fmt_secs $((SECONDS - start)))"
done
echo "control plane $KUBE_VERSION: $built built, $((n - built)) up to date, $(fmt_secs $((SECONDS - total_start))) total"
echo "$out"
