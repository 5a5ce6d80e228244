#!/usr/bin/env bash
# Builds kwokctl, the start-up peer `rlab bench --kwokctl` times the sandbox
# against, from the same kwok module version rlab depends on, in a module of
# its own (its dependencies are not rlab's), into the per-user cache:
#   scripts/build-kwokctl.sh      → prints the binary's path
# Minutes the first time (module downloads), instant after.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

version=$(go list -m -f '{{.Version}}' sigs.k8s.io/kwok)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/rlab/kwokctl/$version
bin=$cache/kwokctl
if [[ -x $bin ]]; then
	echo "$bin"
	exit 0
fi
mkdir -p "$cache/src"
cd "$cache/src"
cat >go.mod <<MOD
module rlab.local/kwokctl

go 1.26

require sigs.k8s.io/kwok $version
MOD
cat >tools.go <<'SRC'
//go:build tools

package tools

import _ "sigs.k8s.io/kwok/cmd/kwokctl"
SRC
echo "build-kwokctl: kwokctl $version (module downloads the first time) ..." >&2
go mod tidy >&2
go build -trimpath -o "$bin.tmp" sigs.k8s.io/kwok/cmd/kwokctl
mv "$bin.tmp" "$bin"
echo "$bin"
