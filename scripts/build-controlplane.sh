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
#   scripts/build-controlplane.sh --platform darwin/arm64
#                                            cross-build (CGO_ENABLED=0) for another
#                                            GOOS/GOARCH, into its own directory
#                                            ($KUBE_VERSION-darwin-arm64 beside the
#                                            host's), never touching the host build
#   scripts/build-controlplane.sh --print-stamp [--platform P]
#                                            print the stamp a build would write, and
#                                            exit (to see why something rebuilds)
#   RLAB_ASSETS=/dir scripts/...             build into exactly /dir instead
#
# Idempotent: each binary carries a stamp (BIN.stamp, one line):
#
#   RECIPE PLATFORM GOVERSION ORIGIN     e.g. 3f2a9c0d1e2b4a5c linux/amd64 go1.26.8 build
#
# RECIPE hashes what the binary is made of: go.mod, go.sum and the build recipe
# below (versions, packages, flags); not this whole script, so editing its
# messages rebuilds nothing. ORIGIN is "build" (built here), "pack" (installed
# by `rlab assets unpack` from an instructor's archive, whose checksums it
# verified) or "mirror" (fetched from a classroom mirror, checked likewise). A
# binary is up to date when RECIPE and PLATFORM match and either GOVERSION is
# this Go (a local build is redone when Go changes) or ORIGIN is pack or
# mirror: such a binary was built by another machine's Go, and rebuilding it
# for that reason alone would need the network the archive exists to avoid.
# ORIGIN "release" is an official release binary fetched by `rlab assets get`
# and checked against its published sha256; its RECIPE is "release-VERSION",
# and it is up to date while PLATFORM matches and VERSION is the one pinned
# here (KUBE_VERSION, ETCD_VERSION or KWOK_VERSION). A stamp in any other form
# is stale (but for the previous script's, see below).
#
# One `go build` builds every binary that is not up to date, so that their
# shared packages are compiled once and one link overlaps the next package's
# compiles; each binary's own -ldflags are given by package pattern, so the
# binaries are the same as built one at a time.
#
# Atomic: the binaries are built into a staging directory and each renamed
# into place, so an interrupted build never leaves a binary that looks
# complete.
set -euo pipefail

readonly KUBE_VERSION=v1.36.3
readonly KWOK_VERSION=v0.8.0
readonly ETCD_VERSION=v3.6.8 # go.mod's go.etcd.io/etcd/server/v3
readonly GO_MIN_MINOR=26 # go 1.26, what k8s.io/kubernetes v1.36 declares

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module="$here/controlplane"

die() { echo "build-controlplane: $*" >&2; exit 1; }

platform=""
print_stamp=""
names=()
while (($# > 0)); do
	case "$1" in
	--platform) (($# >= 2)) || die "--platform needs GOOS/GOARCH, e.g. darwin/arm64"; platform=$2; shift 2 ;;
	--platform=*) platform=${1#--platform=}; shift ;;
	--print-stamp) print_stamp=1; shift ;;
	-*) die "unknown option '$1' (known: --platform GOOS/GOARCH, --print-stamp)" ;;
	*) names+=("$1"); shift ;;
	esac
done

command -v go >/dev/null 2>&1 ||
	die "Go is not installed or not on PATH; install Go 1.$GO_MIN_MINOR or newer (https://go.dev/dl)"
{ read -r gov && read -r hostos && read -r hostarch; } < <(go env GOVERSION GOHOSTOS GOHOSTARCH) ||
	die "cannot run 'go env'"
minor=$(sed -E 's/^go1\.([0-9]+).*/\1/' <<<"$gov") # gov is e.g. go1.26.8
[[ "$minor" =~ ^[0-9]+$ ]] || die "cannot read the Go version from '$gov'"
((minor >= GO_MIN_MINOR)) ||
	die "Go $gov is too old: k8s.io/kubernetes $KUBE_VERSION needs Go 1.$GO_MIN_MINOR or newer"

host="$hostos/$hostarch"
platform=${platform:-$host}
[[ "$platform" =~ ^[a-z0-9]+/[a-z0-9]+$ ]] || die "bad platform '$platform': want GOOS/GOARCH, e.g. darwin/arm64"
goos=${platform%/*}
goarch=${platform#*/}
cache_dir=${XDG_CACHE_HOME:-$HOME/.cache}/rlab/controlplane
if [[ "$platform" == "$host" ]]; then
	out=${RLAB_ASSETS:-$cache_dir/$KUBE_VERSION}
else
	out=${RLAB_ASSETS:-$cache_dir/$KUBE_VERSION-$goos-$goarch}
fi

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
# Every binary is built the same way, for any platform, with CGO_ENABLED=0.
# -dwarf=false: the compiler makes no debug info, which the linker's -w would
# throw away anyway; a fifth of a build from empty Go caches on 2 cores (its
# compiling and linking: 450 s with debug info, 348 s without). The build
# info records the flag, so the bytes differ from a build without it; the
# sources and optimizations are the same.
readonly go_build=(go build -trimpath -gcflags=all=-dwarf=false)

# name|package|ldflags, in the order the sandbox needs them. Built by default.
# (A package's last element is its binary's name: go build -o DIR/ names it so.)
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

# The recipe: what the binaries are made of (see the stamp rule above). If you
# change the output in a way these lines do not show, bump RECIPE_REV.
readonly RECIPE_REV=1
recipe=$({
	cat "$module/go.mod" "$module/go.sum" "$module"/etcd/*.go
	printf '%s\n' "$RECIPE_REV" "CGO_ENABLED=0 ${go_build[*]}" "${all_targets[@]}" "${extra_targets[@]}"
} | sha256sum | cut -c1-16)
stamp="$recipe $platform $gov build"

# Stamps written before this form were a bare hash of go.mod, go.sum, the
# script as of commit d7b5121 and the Go version, for a build of this very
# recipe for the host. Where git can show that script and the hash still holds,
# such a stamp is rewritten in this form instead of rebuilding (once per
# binary); elsewhere (no git, a shallow clone) the binary rebuilds.
legacy=""
if [[ "$platform" == "$host" ]] && legacy=$({
	cat "$module/go.mod" "$module/go.sum"
	git -C "$here" show d7b5121:scripts/build-controlplane.sh 2>/dev/null
	echo "$gov"
} | sha256sum | cut -c1-16); then
	:
else
	legacy=""
fi
if [[ -n "$print_stamp" ]]; then
	echo "$stamp"
	exit 0
fi

# current BIN: BIN exists and its stamp says it is up to date (the rule above;
# a legacy stamp that holds is rewritten).
current() {
	local s_recipe="" s_platform="" s_go="" s_origin=""
	[[ -x "$1" && -f "$1.stamp" ]] || return 1
	if [[ -n "$legacy" && "$(cat "$1.stamp")" == "$legacy" ]]; then
		echo "$stamp" >"$1.stamp.tmp" && mv -f "$1.stamp.tmp" "$1.stamp"
		return 0
	fi
	read -r s_recipe s_platform s_go s_origin _ <"$1.stamp" || true
	[[ "$s_platform" == "$platform" ]] || return 1
	if [[ "$s_origin" == release ]]; then
		[[ "$s_recipe" == "release-$(upstream_version "$(basename "$1")")" ]]
		return
	fi
	[[ "$s_recipe" == "$recipe" ]] || return 1
	[[ "$s_go" == "$gov" || "$s_origin" == pack || "$s_origin" == mirror ]]
}

# upstream_version BIN: the release version BIN is pinned at.
upstream_version() {
	case "$1" in
	etcd) echo "$ETCD_VERSION" ;;
	kwok) echo "$KWOK_VERSION" ;;
	*) echo "$KUBE_VERSION" ;;
	esac
}

targets=()
if ((${#names[@]} == 0)); then
	targets=("${all_targets[@]}")
else
	for want in "${names[@]}"; do
		found=""
		for t in "${all_targets[@]}" "${extra_targets[@]}"; do
			if [[ "${t%%|*}" == "$want" ]]; then
				targets+=("$t")
				found=1
			fi
		done
		if [[ -z "$found" ]]; then
			known=""
			for t in "${all_targets[@]}" "${extra_targets[@]}"; do known+=" ${t%%|*}"; done
			die "unknown binary '$want'; known:$known"
		fi
	done
fi

mkdir -p "$out"

fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

stage=""
heartbeat=""
cleanup() {
	[[ -n "$heartbeat" ]] && kill "$heartbeat" 2>/dev/null || true
	[[ -n "$stage" ]] && rm -rf "$stage"
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

what="control plane $KUBE_VERSION"
[[ "$platform" == "$host" ]] || what+=" for $platform"
total_start=$SECONDS
n=${#targets[@]}
i=0
todo=()
for t in "${targets[@]}"; do
	i=$((i + 1))
	IFS='|' read -r name _ _ <<<"$t"
	if current "$out/$name"; then
		echo "[$i/$n] $name: up to date"
	else
		todo+=("$t")
	fi
done
built=${#todo[@]}
if ((built > 0)); then
	pkgs=()
	flags=()
	names=()
	for t in "${todo[@]}"; do
		IFS='|' read -r name pkg ldflags <<<"$t"
		names+=("$name")
		pkgs+=("$pkg")
		flags+=("-ldflags=$pkg=$ldflags")
	done
	echo "building ${names[*]} for $platform in one go build ..."
	# A quiet go build can last minutes on a cold cache; say it is still alive.
	# (sleep writes nowhere: left behind by kill, it must not hold a pipe open.)
	(
		start=$SECONDS
		while sleep 30 >/dev/null 2>&1; do echo "still building ($(fmt_secs $((SECONDS - start))))"; done
	) &
	heartbeat=$!
	# What a killed build left (an hour old: not another build's under way).
	find "$out" -maxdepth 1 -name '.build.*' -mmin +60 -exec rm -rf {} + 2>/dev/null || true
	stage=$(mktemp -d "$out/.build.XXXXXX")
	(cd "$module" && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch "${go_build[@]}" "${flags[@]}" -o "$stage/" "${pkgs[@]}") ||
		die "go build of ${names[*]} for $platform failed"
	kill "$heartbeat" 2>/dev/null || true
	wait "$heartbeat" 2>/dev/null || true
	heartbeat=""
	for name in "${names[@]}"; do
		[[ -f "$stage/$name" ]] || die "go build wrote no $name"
		chmod 0755 "$stage/$name"
		mv -f "$stage/$name" "$out/$name"
		echo "$stamp" >"$out/$name.stamp.tmp" && mv -f "$out/$name.stamp.tmp" "$out/$name.stamp"
		echo "built $name"
	done
fi
echo "$what: $built built, $((n - built)) up to date, $(fmt_secs $((SECONDS - total_start))) total"
echo "$out"
