#!/usr/bin/env bash
# An OCI runtime for dockerd on hosts whose capability bounding set lacks
# CAP_SYS_RESOURCE (some sandboxes withhold it): `docker run --privileged` asks
# for every capability and runc fails with "unable to apply caps". This drops
# CAP_SYS_RESOURCE from the container's spec, then runs runc unchanged.
#
# runc reads the spec from <bundle>/config.json for create/run and from the
# --process file for exec (capabilities at the top level there); both are
# edited. Registered by scripts/setup-docker.sh only where a privileged test
# container fails; elsewhere dockerd keeps its default runtime.
set -euo pipefail

runc=${RLAB_RUNC:-/usr/sbin/runc}
[[ -x "$runc" ]] || runc=$(command -v runc)

drop='with_entries(.value |= (if type == "array" then map(select(. != "CAP_SYS_RESOURCE")) else . end))'

edit() { # file jq-path
	local f=$1 path=$2 tmp
	[[ -f "$f" ]] || return 0
	tmp=$(mktemp "$f.XXXXXX")
	jq "if $path then $path |= $drop else . end" "$f" >"$tmp"
	mv -f "$tmp" "$f"
}

args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	case "${args[i]}" in
	--bundle | -b) edit "${args[i + 1]}/config.json" .process.capabilities ;;
	--bundle=*) edit "${args[i]#--bundle=}/config.json" .process.capabilities ;;
	--process | -p) edit "${args[i + 1]}" .capabilities ;;
	--process=*) edit "${args[i]#--process=}" .capabilities ;;
	esac
done
exec "$runc" "$@"
