#!/usr/bin/env bash
# Builds rlab's offline kind node image, rlab.local/kind-node:<kube version>,
# from parts that need no container registry: Debian packages (debootstrap),
# the kind module's node layout, and Kubernetes built from Go modules. The
# control-plane images, pause and the Echo workload (rlab.local/echo-server:v1)
# are made here too and imported into containerd when a node boots.
#
#   scripts/build-kind-node.sh            build what is missing or stale, load it into Docker
#   scripts/build-kind-node.sh --if-able  the same where it can be done (make test): on a
#                                         machine without Docker, or not root with no image
#                                         yet, say in one line that the kind tests will be
#                                         skipped and how to enable them (a failure instead
#                                         with RLAB_REQUIRE_KIND=1, as in CI)
#
# Needs root (debootstrap, chroot, file ownership in the node) and a running
# Docker (scripts/setup-docker.sh). Cached per user under
# ${XDG_CACHE_HOME:-~/.cache}/rlab/kind/: every output carries a stamp of its
# inputs and is rebuilt only when they change; each is written under a
# temporary name and renamed, so an interrupted build leaves nothing that looks
# complete. A warm run only compares stamps. The last line printed is the image
# tag; node-image.txt in the cache describes the image for Go code.
set -euo pipefail

readonly KUBE_VERSION=v1.36.3
readonly KIND_VERSION=v0.33.0
readonly ETCD_TAG=3.6.8-0           # kubeadm v1.36.3 config images list
readonly PAUSE_TAGS=(3.10.2 3.10)   # kubeadm's pause and kind's containerd sandbox_image
# The component images are rlab's own, named under rlab.local: the kind
# cluster's kubeadm config sets imageRepository to it (sim/cluster/kind.go),
# and containerd's sandbox image is set to its pause below.
readonly IMAGE_REPO=rlab.local
readonly ECHO_IMAGE=$IMAGE_REPO/echo-server:v1
readonly NODE_IMAGE=rlab.local/kind-node:$KUBE_VERSION
readonly STAMP_LABEL=io.rlab.node-stamp
readonly SUITE=bookworm
readonly POD_CIDR=10.244.0.0/24     # the first node's pod CIDR in kind's default podSubnet
# The node's Debian packages (debootstrap --variant=minbase adds the essentials).
readonly PACKAGES=(
	systemd systemd-sysv containerd runc containernetworking-plugins
	iptables nftables conntrack ebtables iproute2 ethtool socat
	util-linux mount kmod procps jq ca-certificates libseccomp2
)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
cache=${XDG_CACHE_HOME:-$HOME/.cache}/rlab/kind
readonly n=8

die() { echo "build-kind-node: $*" >&2; exit 1; }
fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
sum() { sha256sum | cut -c1-16; }

# --- the step in progress, its heartbeat and its temporary files -------------
step_i=0
step_name=""
step_start=0
heartbeat=""
tmps=()

step() { # step NAME: start the next step
	step_i=$((step_i + 1))
	step_name=$1
	step_start=$SECONDS
}
say() { echo "[$step_i/$n] $step_name: $*"; }
beat_start() { # print a line every 30 s while a long, quiet command runs
	local i=$step_i name=$step_name start=$SECONDS
	(while sleep 30 >/dev/null 2>&1; do echo "[$i/$n] $name: still working ($(fmt_secs $((SECONDS - start))))"; done) &
	heartbeat=$!
}
beat_stop() {
	[[ -n "$heartbeat" ]] || return 0
	kill "$heartbeat" 2>/dev/null || true
	wait "$heartbeat" 2>/dev/null || true
	heartbeat=""
}
done_in() { say "$* in $(fmt_secs $((SECONDS - step_start)))"; }
cleanup() {
	beat_stop
	for t in "${tmps[@]}"; do rm -rf --one-file-system "$t"; done
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# fresh FILE STAMP: FILE exists and its stamp file says STAMP.
fresh() { [[ -e "$1" && -f "$1.stamp" && "$(cat "$1.stamp")" == "$2" ]]; }
# publish TMP FILE STAMP: rename TMP to FILE atomically, then write its stamp.
publish() {
	mv -f "$1" "$2"
	echo "$3" >"$2.stamp.tmp" && mv -f "$2.stamp.tmp" "$2.stamp"
}
need_root() {
	((EUID == 0)) || die "this step needs root ($1); run it as root, e.g. sudo $0"
}

# --- checks -----------------------------------------------------------------
if [[ "${1:-}" == "--if-able" ]]; then
	why=""
	if ! command -v docker >/dev/null 2>&1; then
		why="Docker is not installed"
	elif ! docker info >/dev/null 2>&1; then
		why="Docker does not answer"
	elif ((EUID != 0)); then
		# Without root nothing can be rebuilt here: use the image if it exists.
		if docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then
			echo "kind node image $NODE_IMAGE present (not root: not checked for staleness; sudo make kind-image rebuilds it)"
			exit 0
		fi
		why="building the node image needs root"
	fi
	if [[ -n "$why" ]]; then
		enable="as root: scripts/setup-docker.sh && make kind-image"
		[[ "${RLAB_REQUIRE_KIND:-}" == 1 ]] && die "kind tests cannot run: $why (RLAB_REQUIRE_KIND=1); enable them with: $enable"
		echo "kind tests will be skipped: $why; enable them with: $enable"
		exit 0
	fi
elif [[ $# -gt 0 ]]; then
	die "unknown argument '$1' (want none, or --if-able)"
fi
command -v go >/dev/null 2>&1 || die "Go is not installed or not on PATH"
command -v docker >/dev/null 2>&1 || die "Docker is not installed: run scripts/setup-docker.sh"
if ! docker_err=$(docker info 2>&1 >/dev/null); then
	[[ "$docker_err" == *"permission denied"* ]] &&
		die "Docker is running but refuses user $(id -un) (permission denied); run this script as root"
	die "Docker is not running: run scripts/setup-docker.sh"
fi
# kind's node layout comes from its module (in the module cache, or fetched
# from the Go module proxy).
kind_mod=$(go env GOMODCACHE)/sigs.k8s.io/kind@$KIND_VERSION
if [[ ! -d "$kind_mod" ]]; then
	kind_mod=$(cd / && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | jq -r .Dir) ||
		die "cannot download the Go module sigs.k8s.io/kind@$KIND_VERSION"
fi
kind_files=$kind_mod/images/base/files
[[ -f "$kind_files/usr/local/bin/entrypoint" ]] || die "kind's node files are missing at $kind_files"
command -v jq >/dev/null 2>&1 || die "jq is not installed: apt-get install -y jq"
kube_mod=$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION
mkdir -p "$cache/images"
total_start=$SECONDS

# --- 1. binaries ------------------------------------------------------------
step binaries
say "kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kubectl, kubelet, kubeadm via build-controlplane.sh"
log=$(mktemp)
tmps+=("$log")
bash "$here/build-controlplane.sh" kube-apiserver etcd kube-controller-manager kube-scheduler kubectl kubelet kubeadm |
	tee "$log" | sed -u "s|^|[$step_i/$n] $step_name: |" || die "build-controlplane.sh failed"
bin=$(tail -n 1 "$log")
[[ -x "$bin/kubeadm" ]] || die "build-controlplane.sh did not leave kubeadm in '$bin'"

# --- 2. pause ---------------------------------------------------------------
step pause
pause_src=$kube_mod/build/pause/linux/pause.c
[[ -f "$pause_src" ]] || (cd "$here/controlplane" && go mod download k8s.io/kubernetes) >/dev/null ||
	die "cannot find $pause_src"
command -v gcc >/dev/null 2>&1 || die "gcc is not installed: apt-get install -y gcc libc6-dev"
pause_cflags=(-Os -Wall -Werror -static "-DVERSION=v${PAUSE_TAGS[0]}-rlab")
pause_stamp=$({ cat "$pause_src"; echo "${pause_cflags[*]}"; gcc --version | head -n 1; } | sum)
if fresh "$cache/pause" "$pause_stamp"; then
	say "up to date"
else
	say "compiling $pause_src (static)"
	tmp=$(mktemp "$cache/.pause.XXXXXX")
	tmps+=("$tmp")
	gcc "${pause_cflags[@]}" -o "$tmp" "$pause_src" ||
		die "gcc could not build pause statically (apt-get install -y libc6-dev)"
	chmod 0755 "$tmp"
	publish "$tmp" "$cache/pause" "$pause_stamp"
	done_in "built"
fi

# --- 3. tools: kindimage and the Echo workload ------------------------------
step tools
gov=$(go env GOVERSION)
go_stamp() { # go_stamp PKG...: the sources of the packages, go.mod, go.sum, Go
	(cd "$repo" && { cat go.mod go.sum; for p in "$@"; do cat "$p"/*.go; done; echo "$gov"; }) | sum
}
for t in "kindimage|./scripts/kindimage" "echo-server|./cmd/echo-server"; do
	IFS='|' read -r tname tpkg <<<"$t"
	tstamp=$(go_stamp "$tpkg")
	if fresh "$cache/$tname" "$tstamp"; then
		say "$tname up to date"
		continue
	fi
	say "building $tname"
	tmp=$(mktemp "$cache/.$tname.XXXXXX")
	tmps+=("$tmp")
	(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp" "$tpkg") ||
		die "go build of $tpkg failed"
	publish "$tmp" "$cache/$tname" "$tstamp"
	done_in "built $tname"
done
kindimage=$cache/kindimage

# --- 4. images the node preloads ---------------------------------------------
step images
path_env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
pause_args=(-file "$cache/pause:/pause" -entrypoint /pause -user 65535:65535)
for t in "${PAUSE_TAGS[@]}"; do pause_args+=(-tag "$IMAGE_REPO/pause:$t"); done
# file|kindimage arguments (tab-separated)
images=(
	"kube-apiserver|-file	$bin/kube-apiserver:/usr/local/bin/kube-apiserver	-entrypoint	/usr/local/bin/kube-apiserver	-env	$path_env	-tag	$IMAGE_REPO/kube-apiserver:$KUBE_VERSION"
	"kube-controller-manager|-file	$bin/kube-controller-manager:/usr/local/bin/kube-controller-manager	-entrypoint	/usr/local/bin/kube-controller-manager	-env	$path_env	-tag	$IMAGE_REPO/kube-controller-manager:$KUBE_VERSION"
	"kube-scheduler|-file	$bin/kube-scheduler:/usr/local/bin/kube-scheduler	-entrypoint	/usr/local/bin/kube-scheduler	-env	$path_env	-tag	$IMAGE_REPO/kube-scheduler:$KUBE_VERSION"
	"etcd|-file	$bin/etcd:/usr/local/bin/etcd	-entrypoint	/usr/local/bin/etcd	-env	$path_env	-tag	$IMAGE_REPO/etcd:$ETCD_TAG"
	"pause|$(IFS=$'\t'; echo "${pause_args[*]}")"
	"echo-server|-file	$cache/echo-server:/echo-server	-entrypoint	/echo-server	-tag	$ECHO_IMAGE"
)
image_stamps=""
built=0
for spec in "${images[@]}"; do
	iname=${spec%%|*}
	IFS=$'\t' read -r -a iargs <<<"${spec#*|}"
	out=$cache/images/$iname.tar
	# The stamp covers the files put in the image (by content), the arguments and the tool.
	istamp=$({
		printf '%s\n' "${iargs[@]}"
		for ((a = 0; a < ${#iargs[@]}; a++)); do
			[[ "${iargs[a]}" == -file ]] && sha256sum <"${iargs[a + 1]%%:*}"
		done
		cat "$kindimage.stamp"
	} | sum)
	image_stamps+="$iname=$istamp "
	if fresh "$out" "$istamp"; then
		continue
	fi
	say "making $iname.tar"
	"$kindimage" "${iargs[@]}" -o "$out.new" || die "kindimage failed for $iname"
	publish "$out.new" "$out" "$istamp"
	built=$((built + 1))
done
# Tarballs of images no longer made would be preloaded too: remove them.
for f in "$cache/images"/*.tar; do
	[[ -e "$f" ]] || continue
	b=$(basename "$f" .tar)
	[[ " $image_stamps" == *" $b="* ]] || rm -f "$f" "$f.stamp"
done
if ((built == 0)); then say "up to date (${#images[@]} images)"; else done_in "$built of ${#images[@]} made"; fi

# --- 5. Debian root file system -----------------------------------------------
step rootfs
# The mirror the machine already uses: the first Debian URI of its apt sources
# that serves $SUITE (deb822 .sources or one-line .list), so no host name is
# written anywhere.
apt_mirror() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[[ -f "$f" ]] || continue
		if [[ "$f" == *.sources ]]; then
			awk -v suite="$SUITE" '
				BEGIN { RS = ""; FS = "\n" }
				{
					uris = ""; ok = 0; deb = 0
					for (i = 1; i <= NF; i++) {
						if ($i ~ /^URIs:/) { uris = $i; sub(/^URIs:[ \t]*/, "", uris) }
						if ($i ~ /^Suites:/ && (" " $i " ") ~ (" " suite " ")) ok = 1
						if ($i ~ /^Types:/ && $i ~ /(^|[ \t])deb([ \t]|$)/) deb = 1
					}
					if (ok && deb && uris != "") { split(uris, u, /[ \t]+/); print u[1]; exit }
				}' "$f"
		else
			awk -v suite="$SUITE" '$1 == "deb" {
				i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				if ($(i + 1) == suite) { print $i; exit }
			}' "$f"
		fi
	done | head -n 1
}
make_rootfs() { # make_rootfs DIR: debootstrap and slim a Debian root into DIR
	local dir=$1 mirror
	mirror=$(apt_mirror)
	[[ -n "$mirror" ]] || die "no apt source for Debian $SUITE in /etc/apt/sources.list{,.d}; debootstrap needs a mirror"
	debootstrap --variant=minbase --include="$(IFS=,; echo "${PACKAGES[*]}")" "$SUITE" "$dir" "$mirror" \
		>"$dir.log" 2>&1 || { tail -n 20 "$dir.log" >&2; die "debootstrap failed (log: $dir.log)"; }
	rm -f "$dir.log"
	rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/var/cache/debconf/*-old \
		"$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/info/* \
		"$dir"/usr/share/lintian "$dir"/usr/share/locale/* "$dir"/var/log/*.log \
		"$dir"/var/log/apt/* "$dir"/tmp/* "$dir"/var/tmp/*
}
rootfs=$cache/rootfs-$SUITE.tar
rootfs_stamp=$({ printf '%s\n' "$SUITE" "${PACKAGES[@]}"; declare -f make_rootfs apt_mirror; } | sum)
if fresh "$rootfs" "$rootfs_stamp"; then
	say "up to date"
else
	need_root "debootstrap"
	command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not installed: apt-get install -y debootstrap"
	say "debootstrap $SUITE with ${#PACKAGES[@]} packages (about 2-3 minutes)"
	dir=$(mktemp -d "$cache/.rootfs.XXXXXX")
	tmps+=("$dir" "$dir.log")
	beat_start
	make_rootfs "$dir"
	tar --numeric-owner --xattrs -C "$dir" -cf "$dir.tar" . || die "cannot tar the root file system"
	beat_stop
	tmps+=("$dir.tar")
	publish "$dir.tar" "$rootfs" "$rootfs_stamp"
	rm -rf --one-file-system "$dir"
	done_in "built ($(du -h "$rootfs" | cut -f1))"
fi

# --- 6. the node's root file system and image ------------------------------------
step node
# The node's own files, written into the root by assemble_node below.
# shellcheck disable=SC2016 # expanded in the node, not here
rlab_preload_sh='#!/bin/sh
# Imports the images rlab built into the k8s.io namespace of containerd, once
# per node (the marker lives in /var, the volume of the node).
set -eu
marker=/var/lib/rlab/preloaded
[ -e "$marker" ] && [ "$(cat "$marker")" = "$(cat /kind/images/stamp)" ] && exit 0
for i in 1 2 3 4 5 6 7 8 9 10; do ctr version >/dev/null 2>&1 && break; sleep 1; done
for f in /kind/images/*.tar; do
	ctr -n k8s.io images import --no-unpack "$f" >/dev/null
done
mkdir -p /var/lib/rlab
cp /kind/images/stamp "$marker"
'
rlab_preload_unit='[Unit]
Description=Import the images rlab preloads into containerd
After=containerd.service
Requires=containerd.service
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/kind/bin/rlab-preload.sh

[Install]
WantedBy=multi-user.target
'
kubelet_dropin='# rlab: start kubelet only once the preloaded images are in containerd.
[Unit]
Wants=rlab-preload.service
After=rlab-preload.service
'
cni_conflist='{
  "cniVersion": "1.0.0",
  "name": "rlab",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "'"$POD_CIDR"'"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      },
      "mtu": 1500
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
'
# kind applies this at create time; it is kind's own fallback (no provisioner
# image to preload), written here so that kind finds it and does not warn.
storage_manifest='apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/host-path
'
assemble_node() { # assemble_node ROOT: lay the node out in ROOT (the Debian root unpacked)
	local root=$1 f
	# kind's base image files, with the modes its Dockerfile gives them.
	install -m 0755 "$kind_files"/usr/local/bin/* "$root/usr/local/bin/"
	mkdir -p "$root/kind/bin" "$root/kind/images" "$root/LICENSES" "$root/etc/systemd/system/kubelet.service.d"
	install -m 0644 "$kind_files"/kind/README.txt "$root/kind/"
	install -m 0755 "$kind_files"/kind/bin/* "$root/kind/bin/"
	install -m 0644 "$kind_files"/LICENSES/* "$root/LICENSES/"
	install -m 0644 "$kind_files"/etc/crictl.yaml "$root/etc/"
	install -m 0644 -D "$kind_files"/etc/containerd/config.toml "$root/etc/containerd/config.toml"
	install -m 0644 -D "$kind_files"/etc/default/kubelet "$root/etc/default/kubelet"
	install -m 0644 "$kind_files"/etc/sysctl.d/* "$root/etc/sysctl.d/"
	for f in "$kind_files"/etc/systemd/system/*; do
		[[ -f "$f" ]] && install -m 0644 "$f" "$root/etc/systemd/system/"
	done
	install -m 0644 "$kind_files"/etc/systemd/system/kubelet.service.d/* "$root/etc/systemd/system/kubelet.service.d/"
	# The node has no CAP_SYS_RESOURCE: containerd must not ask for negative OOM scores.
	sed -i 's/^\([[:space:]]*restrict_oom_score_adj[[:space:]]*=\).*/\1 true/' "$root/etc/containerd/config.toml"
	sed -i "s|^\([[:space:]]*sandbox_image[[:space:]]*=\).*|\1 \"$IMAGE_REPO/pause:${PAUSE_TAGS[1]}\"|" "$root/etc/containerd/config.toml"
	grep -q "sandbox_image = \"$IMAGE_REPO/pause:" "$root/etc/containerd/config.toml" ||
		die "kind's containerd config has no sandbox_image line to set"
	grep -q 'restrict_oom_score_adj = true' "$root/etc/containerd/config.toml" ||
		die "kind's containerd config has no restrict_oom_score_adj line to set"

	# The clean-up of kind's base Dockerfile.
	find "$root/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
	rm -f "$root"/lib/systemd/system/multi-user.target.wants/* "$root"/etc/systemd/system/*.wants/* \
		"$root"/lib/systemd/system/local-fs.target.wants/* "$root"/lib/systemd/system/sockets.target.wants/*udev* \
		"$root"/lib/systemd/system/sockets.target.wants/*initctl* "$root"/lib/systemd/system/basic.target.wants/*
	echo "ReadKMsg=no" >>"$root/etc/systemd/journald.conf"
	ln -sfn /usr/lib/systemd/systemd "$root/sbin/init"
	mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
	for f in kubelet containerd undo-mount-hacks rlab-preload; do
		ln -sfn "/etc/systemd/system/$f.service" "$root/etc/systemd/system/multi-user.target.wants/$f.service"
	done
	ln -sfn /dev/null "$root/etc/systemd/system/systemd-binfmt.service"
	mkdir -p "$root/etc/kubernetes/manifests"

	# Debian's containerd and CNI plugins where kind's files expect them.
	ln -sfn /usr/bin/containerd "$root/usr/local/bin/containerd"
	mkdir -p "$root/opt/cni"
	rm -rf "$root/opt/cni/bin"
	ln -sfn /usr/lib/cni "$root/opt/cni/bin"
	chroot "$root" ctr oci spec |
		jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
		jq 'del(.process.rlimits)' >"$root/etc/containerd/cri-base.json" ||
		die "cannot write cri-base.json with the node's ctr oci spec"
	mkdir -p "$root/etc/cni/net.d"
	printf '%s' "$cni_conflist" >"$root/etc/cni/net.d/10-rlab.conflist"

	# Kubernetes.
	for f in kubelet kubeadm kubectl; do install -m 0755 "$bin/$f" "$root/usr/bin/$f"; done
	echo "$KUBE_VERSION" >"$root/kind/version"
	mkdir -p "$root/kind/manifests"
	printf '%s' "$storage_manifest" >"$root/kind/manifests/default-storage.yaml"

	# Preloaded images, imported at boot before kubelet starts.
	install -m 0644 "$cache"/images/*.tar "$root/kind/images/"
	echo "$image_stamps" >"$root/kind/images/stamp"
	printf '%s' "$rlab_preload_sh" >"$root/kind/bin/rlab-preload.sh"
	chmod 0755 "$root/kind/bin/rlab-preload.sh"
	printf '%s' "$rlab_preload_unit" >"$root/etc/systemd/system/rlab-preload.service"
	printf '%s' "$kubelet_dropin" >"$root/etc/systemd/system/kubelet.service.d/20-rlab-preload.conf"
	chmod 0755 "$root/kind" "$root/kind/bin"
}
# What kind expects of a node image's configuration (kind's base Dockerfile).
node_image_args=(
	-entrypoint /usr/local/bin/entrypoint -entrypoint /sbin/init
	-env container=docker -env "$path_env" -stopsignal 'SIGRTMIN+3'
	-label "io.rlab.kube-version=$KUBE_VERSION" -tag "$NODE_IMAGE"
)
node_stamp=$({
	printf '%s\n' "${node_image_args[@]}"
	echo "$rootfs_stamp $image_stamps"
	for f in kubelet kubeadm kubectl; do cat "$bin/$f.stamp"; done
	(cd "$kind_files" && find . -type f | LC_ALL=C sort | xargs sha256sum)
	declare -f assemble_node
	printf '%s\n' "$rlab_preload_sh" "$rlab_preload_unit" "$kubelet_dropin" "$cni_conflist" "$storage_manifest"
	cat "$kindimage.stamp"
} | sum)
node_tar=$cache/node-image.tar
if fresh "$node_tar" "$node_stamp"; then
	say "up to date"
else
	need_root "the node's files keep their owners, and chroot runs ctr"
	say "assembling the node root"
	work=$(mktemp -d "$cache/.node.XXXXXX")
	tmps+=("$work")
	mkdir "$work/root"
	tar --numeric-owner --xattrs -C "$work/root" -xpf "$rootfs" || die "cannot unpack $rootfs"
	assemble_node "$work/root"
	say "packing the node layer and image"
	beat_start
	tar --numeric-owner --xattrs -C "$work/root" -cf "$work/layer.tar" . || die "cannot tar the node root"
	rm -rf --one-file-system "$work/root"
	"$kindimage" -layer "$work/layer.tar" "${node_image_args[@]}" -label "$STAMP_LABEL=$node_stamp" \
		-o "$work/node.tar" || die "kindimage failed for the node image"
	beat_stop
	publish "$work/node.tar" "$node_tar" "$node_stamp"
	rm -rf --one-file-system "$work"
	done_in "built ($(du -h "$node_tar" | cut -f1) compressed)"
fi

# --- 7. docker load -------------------------------------------------------------------
step docker
loaded=$(docker image inspect -f "{{index .Config.Labels \"$STAMP_LABEL\"}}" "$NODE_IMAGE" 2>/dev/null || true)
if [[ "$loaded" == "$node_stamp" ]]; then
	say "$NODE_IMAGE up to date"
else
	say "docker load $NODE_IMAGE"
	beat_start
	docker load -i "$node_tar" >/dev/null || die "docker load -i $node_tar failed"
	beat_stop
	# Node images this replaced are now untagged: drop them (ours carry the
	# stamp label), except those a container still uses.
	for old in $(docker image ls -q --filter dangling=true --filter "label=$STAMP_LABEL"); do
		docker image rm "$old" >/dev/null 2>&1 || true
	done
	done_in "loaded"
fi

# --- 8. manifest for Go code -----------------------------------------------------------
step manifest
size=$(docker image inspect -f '{{.Size}}' "$NODE_IMAGE")
manifest=$cache/node-image.txt
if [[ -f "$manifest" ]] && grep -qx "stamp=$node_stamp" "$manifest"; then
	say "up to date"
else
	{
		echo "image=$NODE_IMAGE"
		echo "stamp=$node_stamp"
		echo "stamp_label=$STAMP_LABEL"
		echo "kube_version=$KUBE_VERSION"
		echo "echo_image=$ECHO_IMAGE"
		echo "size_bytes=$size"
		echo "build_seconds=$((SECONDS - total_start))"
		echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	} >"$manifest.tmp"
	mv -f "$manifest.tmp" "$manifest"
	say "wrote $manifest"
fi
echo "kind node image $NODE_IMAGE: $(fmt_secs $((SECONDS - total_start))) total"
echo "$NODE_IMAGE"
