#!/usr/bin/env bash
# echo-operator.sh: the Echo operator as a kubectl loop, the course's first
# operator made correct. Every --interval seconds it lists the Echoes and, for
# each one, applies the Deployment it asks for and writes the Echo's status
# as echo.Status does in Go: ready, observedGeneration, and the Ready and
# Progressing conditions.
#
# It watches nothing: a change is noticed on the next poll at the earliest.
# It elects no leader either: run two copies and they both write (a lesson).
#
# An Echo with an empty message answers the namespace's default: data.message
# of ConfigMap echo-defaults, read with one more GET only when it reconciles
# such an Echo, or "no message" when there is none (echo.Message in Go).
#
# Logs go to stderr as logfmt. With RLAB_TRACE=1, trace events go to stdout
# as JSON lines (the schema of operators/trace: fields.go lists each kind's keys) and nothing else does.
#
# There is no $(...) in the loop: bash may run a signal trap while it parses
# a $(...), and then fails to parse the trap ("trap: unexpected EOF") and
# dies or hangs instead of stopping. Results come back in variables instead.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: echo-operator.sh --namespace NS [options]

  --namespace NS       namespace whose Echoes to reconcile (required)
  --kubeconfig FILE    kubeconfig for kubectl (default: kubectl's own)
  --interval SECONDS   time between polls (default 5)
  --kubectl PATH       kubectl binary (default kubectl)
  --replica NAME       replica name, for logs and traces (default a)
  --image IMAGE        image every Echo pod runs
                       (default hashicorp/http-echo:0.2.3)
  --message-suffix S   append S to every message: stands for a newer build
                       of this operator that disagrees with the old one
  --finalizer          put the kkloud.io/echo-registry finalizer on Echoes and
                       list them in ConfigMap echo-registry; a deleted Echo
                       goes once it is unlisted
  --help               show this help

Set RLAB_TRACE=1 to write trace events as JSON lines on stdout.
EOF
}

NS="" KUBECONFIG_FILE="" INTERVAL=5 KUBECTL=kubectl REPLICA=a FINALIZE=0 SUFFIX=""
IMAGE=hashicorp/http-echo:0.2.3 # echo.DefaultImage; shell_test.go keeps the two the same
while (($# > 0)); do
  case $1 in
    --namespace) NS=${2:?--namespace needs a value}; shift 2 ;;
    --kubeconfig) KUBECONFIG_FILE=${2:?--kubeconfig needs a value}; shift 2 ;;
    --interval) INTERVAL=${2:?--interval needs a value}; shift 2 ;;
    --kubectl) KUBECTL=${2:?--kubectl needs a value}; shift 2 ;;
    --replica) REPLICA=${2:?--replica needs a value}; shift 2 ;;
    --image) IMAGE=${2:?--image needs a value}; shift 2 ;;
    --finalizer) FINALIZE=1; shift ;;
    --message-suffix) SUFFIX=${2?--message-suffix needs a value}; shift 2 ;;
    --help | -h) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
# Names are DNS labels, so they go into JSON and logs as they are.
dns_label='^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
[[ -n $NS ]] || { echo "--namespace is required" >&2; exit 2; }
[[ $NS =~ $dns_label && $REPLICA =~ $dns_label ]] || { echo "--namespace and --replica must be DNS labels" >&2; exit 2; }
[[ $INTERVAL =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "--interval must be a number of seconds" >&2; exit 2; }
((BASH_VERSINFO[0] >= 5)) || { echo "needs bash 5 or newer (for EPOCHREALTIME)" >&2; exit 2; }

MANAGER=echo-shell # field manager and managed-by label: this style's name
FINALIZER=kkloud.io/echo-registry # the same names as operators/echo/finalizer.go
REGISTRY=echo-registry
DEFAULTS=echo-defaults # echo.DefaultsName: data.message is the default message
FALLBACK="no message"  # echo.FallbackMessage: the message when there is no default
TRACE=${RLAB_TRACE:-0}
# What step 1's GET reads of an Echo. ECHO_CONDITION is one condition on one
# line, tab-separated: we write messages without newlines or tabs, and the
# message comes last so that a tab in one still stays in it.
ECHO_CONDITION='{.status}{"\t"}{.reason}{"\t"}{.observedGeneration}{"\t"}{.lastTransitionTime}{"\t"}{.message}'
ECHO_FIELDS='{.metadata.uid}{"\n"}{.spec.replicas}{"\n"}{.metadata.generation}{"\n"}{.status.ready}{"\n"}{.status.observedGeneration}{"\n"}'
ECHO_FIELDS+='{.metadata.resourceVersion}{"\n"}{.metadata.deletionTimestamp}{"\n"}{.metadata.finalizers[*]}{"\n"}'
ECHO_FIELDS+='{range .status.conditions[?(@.type=="Ready")]}'$ECHO_CONDITION'{end}{"\n"}'
ECHO_FIELDS+='{range .status.conditions[?(@.type=="Progressing")]}'$ECHO_CONDITION'{end}{"\n"}{.spec.message}'
kubectl_cmd=("$KUBECTL" --namespace "$NS" --request-timeout=10s) # a hung apiserver must not stall the loop forever
[[ -z $KUBECONFIG_FILE ]] || kubectl_cmd+=(--kubeconfig "$KUBECONFIG_FILE")
tmp=$(mktemp -d) # kubectl's output and errors, read back from files
trap 'rm -rf "$tmp"' EXIT

# ---- helpers: JSON, time, logs, traces, kubectl ----------------------------

OBJECT="" # what logs and traces are about: "Echo/<name>" inside reconcile_echo

# quote VAR S sets VAR to S as a JSON string. Quotes, backslashes and control
# characters are escaped; unicode passes through as UTF-8, which JSON allows.
# (Locals start with _ so that they never hide the caller's VAR.)
quote() {
  local _s=$2 _i _h _c
  _s=${_s//\\/\\\\}
  _s=${_s//\"/\\\"}
  if [[ $_s =~ [[:cntrl:]] ]]; then # rare: spell out each control character
    for ((_i = 1; _i < 32; _i++)); do
      printf -v _h %02x "$_i"
      printf -v _c %b "\\x$_h"
      _s=${_s//"$_c"/\\u00$_h}
    done
  fi
  printf -v "$1" '"%s"' "$_s"
}

# whole VAR... sets each VAR that holds no whole number to 0: a field an
# object lacks yet counts as 0, and only digits ever reach bash arithmetic.
whole() {
  local _v
  for _v; do [[ ${!_v} =~ ^[0-9]+$ ]] || printf -v "$_v" 0; done
}

# clock sets now_ms (Unix milliseconds) and now_time (RFC 3339, UTC, ms).
clock() {
  local us=${EPOCHREALTIME//[!0-9]/} # seconds.micros, whatever the locale's decimal point
  now_ms=$((us / 1000))
  TZ=UTC0 printf -v now_time '%(%Y-%m-%dT%H:%M:%S)T.%03dZ' $((us / 1000000)) $((now_ms % 1000))
}

# log LEVEL MSG [KEY VALUE]...: one logfmt line on stderr, like Go's slog
# TextHandler, about the Echo in $OBJECT if any.
log() {
  local line v
  clock
  quote v "$2"
  line="time=$now_time level=$1 msg=$v style=shell replica=$REPLICA"
  [[ $OBJECT != Echo/* ]] || line+=" echo=${OBJECT#Echo/}"
  line+=" ns=$NS"
  shift 2
  while (($# >= 2)); do
    v=$2
    if [[ -z $v || $v == *[\ \"=]* || $v =~ [[:cntrl:]] ]]; then quote v "$v"; fi
    line+=" $1=$v"
    shift 2
  done
  echo "$line" >&2
}

# trace KIND [KEY VALUE]...: one trace event on stdout, about $OBJECT.
# Values made only of digits are written as JSON numbers, the rest as strings.
trace() {
  [[ $TRACE == 1 ]] || return 0
  local kind=$1 fields="" v
  shift
  while (($# >= 2)); do
    v=$2
    [[ $v =~ ^-?[0-9]+(\.[0-9]+)?$ ]] || quote v "$v"
    fields+="${fields:+,}\"$1\":$v"
    shift 2
  done
  clock
  printf '{"time":"%s","source":"shell/%s","kind":"%s","ns":"%s"%s,"fields":{%s}}\n' \
    "$now_time" "$REPLICA" "$kind" "$NS" "${OBJECT:+,\"object\":\"$OBJECT\"}" "$fields"
}

# kube VERB ARGS...: runs kubectl ARGS and traces it as VERB ("get echoes").
# Its output is left in $out, all of it; on failure it returns kubectl's exit
# code and leaves its error message in $err.
kube() {
  local verb=$1 start code=0
  shift
  clock; start=$now_ms
  "${kubectl_cmd[@]}" "$@" >"$tmp/out" 2>"$tmp/err" || code=$?
  clock
  trace kubectl verb "$verb" code "$code" duration_ms $((now_ms - start))
  out="" err=""
  IFS= read -r -d '' out <"$tmp/out" || true # up to EOF: trailing newlines too
  IFS= read -r -d '' err <"$tmp/err" || true
  err=${err//$'\n'/ } err=${err% }
  ((code == 0)) || { err=${err:-kubectl exited with code $code}; return "$code"; }
}

# ---- the operator -----------------------------------------------------------

# desired_deployment NAME UID REPLICAS MESSAGE sets $doc to the Deployment an
# Echo asks for, as JSON: the same object echo.DesiredDeployment builds in Go,
# the apiserver's defaults for the pull policy and the probe spelled out as
# there. The message and the image need escaping; names and uids are DNS-safe.
desired_deployment() {
  local name=$1 uid=$2 replicas=$3 arg image labels
  quote arg "-text=$4$SUFFIX"
  quote image "$IMAGE"
  labels="{\"app.kubernetes.io/name\": \"echo\", \"app.kubernetes.io/instance\": \"$name\", \"app.kubernetes.io/managed-by\": \"$MANAGER\"}"
  IFS= read -r -d '' doc <<JSON || true
{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "echo-$name",
    "namespace": "$NS",
    "labels": $labels,
    "ownerReferences": [{"apiVersion": "kkloud.io/v1", "kind": "Echo", "name": "$name", "uid": "$uid",
                         "controller": true, "blockOwnerDeletion": true}]
  },
  "spec": {
    "replicas": $replicas,
    "selector": {"matchLabels": {"app.kubernetes.io/instance": "$name"}},
    "template": {
      "metadata": {"labels": $labels},
      "spec": {"containers": [{"name": "echo", "image": $image, "imagePullPolicy": "IfNotPresent", "args": [$arg],
                               "ports": [{"name": "http", "containerPort": 5678, "protocol": "TCP"}],
                               "readinessProbe": {"httpGet": {"path": "/", "port": "http", "scheme": "HTTP"},
                                                  "timeoutSeconds": 1, "periodSeconds": 10,
                                                  "successThreshold": 1, "failureThreshold": 3}}]}
    }
  }
}
JSON
}

# not_controlled_event records a Warning Event on the Echo saying $err, once
# per Echo: its name holds the Echo's uid, so later polls find it there
# (AlreadyExists) and an Echo made again under the same name gets its own.
not_controlled_event() {
  local msg ev why=$err
  quote msg "$err"
  clock
  IFS= read -r -d '' ev <<JSON || true
{"apiVersion": "v1", "kind": "Event",
 "metadata": {"name": "$name.not-controlled.${uid:0:8}", "namespace": "$NS"},
 "involvedObject": {"apiVersion": "kkloud.io/v1", "kind": "Echo", "name": "$name", "namespace": "$NS", "uid": "$uid"},
 "type": "Warning", "reason": "ErrResourceExists", "message": $msg,
 "source": {"component": "$MANAGER"}, "firstTimestamp": "$now_time", "lastTimestamp": "$now_time", "count": 1}
JSON
  kube "create events" create -f - -o name <<<"$ev" || [[ $err == *"(AlreadyExists)"* ]] ||
    log ERROR "event not recorded" error "$err"
  err=$why
}

# update_status writes the Echo's status as echo.Status computes it in Go:
# status.ready, observedGeneration (the generation step 1 read), then the
# Ready and Progressing conditions, in that order (a merge patch replaces the
# whole list). Nothing is sent when the Echo already says all this. It reads
# reconcile_echo's locals (bash scoping is dynamic).
update_status() {
  local differs=0 conditions="" patch
  [[ $ready == "$current" && $generation == "$observed" ]] || differs=1
  if ((d_ready >= replicas)); then
    set_condition Ready "$cond_ready" True ReplicasReady "$ready replicas ready"
  else
    set_condition Ready "$cond_ready" False ReplicasNotReady "$ready replicas ready"
  fi
  # Still moving toward the spec: not yet seen by the Deployment's
  # controller, or some pods not updated, not ready, or not yet gone.
  if ((d_observed < d_generation || d_updated < replicas || d_ready < replicas || d_replicas > replicas)); then
    set_condition Progressing "$cond_progressing" True RollingOut "Deployment echo-$name is rolling out"
  else
    set_condition Progressing "$cond_progressing" False UpToDate "Deployment echo-$name is up to date"
  fi
  ((differs)) || return 0
  patch="{\"status\": {\"ready\": \"$ready\", \"observedGeneration\": $generation, \"conditions\": [$conditions]}}"
  kube "patch echoes/status" patch echo "$name" --subresource=status --type=merge -p "$patch"
}

# set_condition TYPE CURRENT STATUS REASON MESSAGE appends condition TYPE to
# update_status's $conditions, and sets its $differs unless the Echo's
# CURRENT one already says the same. CURRENT is step 1's line for TYPE:
# status, reason, observedGeneration, lastTransitionTime and message,
# tab-separated, or empty if the Echo has none. The lastTransitionTime stays
# as long as the status does, as meta.SetStatusCondition keeps it.
set_condition() {
  local cur=$2 c_status c_reason c_generation c_at c_message at msg
  c_status=${cur%%$'\t'*} cur=${cur#*$'\t'}
  c_reason=${cur%%$'\t'*} cur=${cur#*$'\t'}
  c_generation=${cur%%$'\t'*} cur=${cur#*$'\t'}
  c_at=${cur%%$'\t'*} c_message=${cur#*$'\t'}
  whole c_generation
  [[ $c_status == "$3" && $c_reason == "$4" && $c_generation == "$generation" && $c_message == "$5" ]] || differs=1
  if [[ $c_status == "$3" && -n $c_at ]]; then
    at=$c_at
  else
    clock
    at=${now_time%.*}Z # whole seconds, as the apiserver stores it
  fi
  quote at "$at"
  quote msg "$5"
  conditions+="${conditions:+, }{\"type\": \"$1\", \"status\": \"$3\", \"reason\": \"$4\", \"message\": $msg,"
  conditions+=" \"observedGeneration\": $generation, \"lastTransitionTime\": $at}"
}

# The finalizer guards state outside the owner tree: each Echo is listed by
# name and uid in ConfigMap $REGISTRY, which the garbage collector knows
# nothing about. These read reconcile_echo's locals name, uid, rv and
# finalizers (bash scoping is dynamic).

has_finalizer() { [[ " $finalizers " == *" $FINALIZER "* ]]; }

# patch_finalizers F... sets the Echo's finalizers to F..., only if it is
# still at the resourceVersion we read (409 otherwise: retried next poll).
patch_finalizers() {
  local list="" f
  for f in "$@"; do list+="${list:+,}\"$f\""; done
  kube "patch echoes" patch echo "$name" --type=merge \
    -p "{\"metadata\":{\"resourceVersion\":\"$rv\",\"finalizers\":[$list]}}"
}

# add_finalizer puts the finalizer on the Echo before anything is
# registered, so no registry entry can outlive its Echo, then lists the Echo.
add_finalizer() {
  local f keep=()
  if ! has_finalizer; then
    for f in $finalizers; do keep+=("$f"); done
    patch_finalizers "${keep[@]}" "$FINALIZER" || return 1
    trace finalizer action added finalizer "$FINALIZER"
  fi
  # The registry stands for an external system: read it every time.
  kube "get configmaps" get configmap "$REGISTRY" --ignore-not-found -o 'jsonpath={.data}' || return 1
  [[ $out != *"\"$name\":\"$uid\""* ]] || return 0
  kube "patch configmaps" patch configmap "$REGISTRY" --type=merge -p "{\"data\":{\"$name\":\"$uid\"}}" && return 0
  [[ $err == *"(NotFound)"* ]] || return 1
  kube "create configmaps" create configmap "$REGISTRY" --from-literal="$name=$uid" && return 0
  [[ $err == *"(AlreadyExists)"* ]] || return 1 # another Echo was first: patch it
  kube "patch configmaps" patch configmap "$REGISTRY" --type=merge -p "{\"data\":{\"$name\":\"$uid\"}}"
}

# finalize cleans up after a deleted Echo that carries our finalizer, then
# removes the finalizer: the apiserver deletes the Echo once none is left.
finalize() {
  local f keep=()
  has_finalizer || return 0
  kube "patch configmaps" patch configmap "$REGISTRY" --type=merge -p "{\"data\":{\"$name\":null}}" ||
    [[ $err == *"(NotFound)"* ]] || return 1 # no registry: nothing to unlist
  for f in $finalizers; do [[ $f == "$FINALIZER" ]] || keep+=("$f"); done
  patch_finalizers "${keep[@]}" || return 1
  trace finalizer action removed finalizer "$FINALIZER"
}

# reconcile_echo NAME brings Deployment echo-NAME and the Echo's status in
# line with Echo NAME. It returns non-zero on failure; the next poll retries.
reconcile_echo() {
  local name=$1 id start step changed=none ready="" uid replicas current message uid_before rv_before owner uid_after rv_after rv deleting finalizers
  local generation observed cond_ready cond_progressing d_generation d_observed d_replicas d_updated d_ready
  reconcile_id=$((reconcile_id + 1)) id=$reconcile_id
  OBJECT="Echo/$name"
  clock; start=$now_ms
  trace reconcile.start id "$id" cause poll cause_event "poll tick"

  # Step 1: fetch the Echo
  # One GET, eleven lines: uid, replicas, generation, status.ready,
  # status.observedGeneration, resourceVersion, deletionTimestamp,
  # finalizers, the Ready and the Progressing condition (ECHO_CONDITION:
  # empty if there is none), then the message, which may hold newlines of
  # its own, so it comes last. The conditions come late too: were one to
  # hold a newline after all, no field we act on shifts, only their own.
  step=fetch
  kube "get echoes" get echo "$name" --ignore-not-found -o jsonpath="$ECHO_FIELDS" ||
    { reconcile_failed; return 1; }
  [[ -n $out ]] || { reconcile_done; return 0; } # deleted since the list: GC removes its Deployment, not us
  uid=${out%%$'\n'*} out=${out#*$'\n'}
  replicas=${out%%$'\n'*} out=${out#*$'\n'}
  generation=${out%%$'\n'*} out=${out#*$'\n'}
  current=${out%%$'\n'*} out=${out#*$'\n'}
  observed=${out%%$'\n'*} out=${out#*$'\n'}
  rv=${out%%$'\n'*} out=${out#*$'\n'}
  deleting=${out%%$'\n'*} out=${out#*$'\n'}
  finalizers=${out%%$'\n'*} out=${out#*$'\n'}
  cond_ready=${out%%$'\n'*} out=${out#*$'\n'}
  cond_progressing=${out%%$'\n'*} message=${out#*$'\n'}
  [[ $replicas =~ ^[0-9]+$ ]] || replicas=1 # unset: the CRD's default; 0 is an Echo scaled to zero
  whole generation observed

  # Step 2: the finalizer
  # A deleted Echo is cleaned up and let go (the garbage collector removes
  # its Deployment once it is gone; the registry entry is ours); the rest
  # get the finalizer and a registry entry.
  step=finalizer
  if [[ -n $deleting ]]; then
    finalize || { reconcile_failed; return 1; }
    reconcile_done
    return 0
  fi
  if ((FINALIZE)); then add_finalizer || { reconcile_failed; return 1; }; fi

  # Step 3: compute the desired Deployment
  # An Echo with no message answers the namespace's default: one more GET,
  # for such an Echo only (nothing caches it here).
  step=desired
  if [[ -z $message ]]; then
    kube "get configmaps" get configmap "$DEFAULTS" --ignore-not-found -o 'jsonpath={.data.message}' ||
      { reconcile_failed; return 1; }
    message=${out:-$FALLBACK}
  fi
  desired_deployment "$name" "$uid" "$replicas" "$message"

  # Step 4: create or update
  # Server-side apply sends the whole desired object; the apiserver merges it
  # and takes back fields someone else changed (--force-conflicts). kubectl
  # prints "serverside-applied" either way, so the uid and resourceVersion
  # before and after tell created, updated and unchanged apart.
  step=apply
  kube "get deployments" get deployment "echo-$name" --ignore-not-found \
    -o jsonpath='{.metadata.uid} {.metadata.resourceVersion} {.metadata.ownerReferences[?(@.controller==true)].uid}' ||
    { reconcile_failed; return 1; }
  read -r uid_before rv_before owner <<<"$out"
  if [[ -n $uid_before && $owner != "$uid" ]]; then
    # Never take over what someone else owns (apply would): say so on the
    # Echo, and fail; the next poll looks again.
    err="Deployment \"echo-$name\" already exists and is not controlled by Echo \"$name\""
    not_controlled_event
    reconcile_failed
    return 1
  fi
  if [[ -n $uid_before ]]; then
    # Only over the Deployment as just read: if the garbage collector
    # orphans it meanwhile (delete --cascade=orphan), an apply would put
    # back the ownerReference it took away, to an Echo about to go, and the
    # collector would then delete the Deployment. With resourceVersion the
    # apply is a conditional write: 409 Conflict if it changed since the
    # read, and the next poll looks again.
    doc=${doc/\"namespace\": \"$NS\",/\"namespace\": \"$NS\", \"resourceVersion\": \"$rv_before\",}
  fi
  # It answers with what step 5 needs of the Deployment too, comma-separated:
  # status fields are missing until its controller sets them, and read
  # would close up runs of spaces, not of commas.
  kube "apply deployments" apply --server-side --field-manager="$MANAGER" --force-conflicts -f - \
    -o jsonpath='{.metadata.uid},{.metadata.resourceVersion},{.metadata.generation},{.status.observedGeneration},{.status.replicas},{.status.updatedReplicas},{.status.readyReplicas}' <<<"$doc" ||
    { reconcile_failed; return 1; }
  IFS=, read -r uid_after rv_after d_generation d_observed d_replicas d_updated d_ready <<<"$out"
  whole d_generation d_observed d_replicas d_updated d_ready
  if [[ $uid_before != "$uid_after" ]]; then changed=created # a new uid is a new object, even if one was there
  elif [[ $rv_before != "$rv_after" ]]; then changed=updated; fi

  # Step 5: write status
  # apply answered with the object as stored, status included: no extra GET.
  step=status
  ready="$d_ready/$replicas"
  update_status || { reconcile_failed; return 1; }
  reconcile_done
}

# reconcile_done and reconcile_failed close one reconcile_echo call, in the
# trace and in the log. They read its locals (bash scoping is dynamic).
reconcile_done() {
  clock
  trace reconcile.end id "$id" result ok duration_ms $((now_ms - start)) changed "$changed" status "$ready"
  log INFO "reconcile done" step "$step" changed "$changed" ready "$ready" duration_ms $((now_ms - start))
}
reconcile_failed() {
  clock
  trace reconcile.end id "$id" result error duration_ms $((now_ms - start)) changed "$changed" status "$ready" error "$err"
  log ERROR "reconcile failed" step "$step" duration_ms $((now_ms - start)) error "$err"
}

# poll lists the Echoes and reconciles each; a failure waits for the next poll.
poll() {
  local names name
  OBJECT=""
  if ! kube "get echoes" get echoes -o jsonpath='{.items[*].metadata.name}'; then
    log ERROR "list echoes failed" step fetch error "$err"
    return 0
  fi
  read -r -a names <<<"$out"
  for name in "${names[@]}"; do
    reconcile_echo "$name" || true
  done
}

# The wait between polls is bash's own `read -t` on a FIFO nobody writes to:
# unlike a `sleep` child, nothing is left behind if this script is killed,
# and a signal ends the wait at once. Unless it arrives just before the
# read starts waiting: bash has run the signal's handler then, and runs the
# trap only when the read returns. So the wait is read in slices of a
# second at most, which bounds how late a SIGTERM is acted on (seen in CI:
# no exit 15 s after SIGTERM, with a 60 s interval).
mkfifo "$tmp/idle"
exec {idle_fd}<>"$tmp/idle"
interval_us=$((${INTERVAL%.*} * 1000000))
if [[ $INTERVAL == *.* ]]; then
  frac="${INTERVAL#*.}000000"
  interval_us=$((interval_us + 10#${frac:0:6}))
fi

# idle waits interval_us microseconds, a second at a time.
idle() {
  local us left slice
  us=${EPOCHREALTIME//[!0-9]/}
  local end=$((us + interval_us))
  while us=${EPOCHREALTIME//[!0-9]/}; ((us < end)); do
    left=$((end - us))
    ((left > 1000000)) && left=1000000
    printf -v slice '%d.%06d' $((left / 1000000)) $((left % 1000000))
    read -r -t "$slice" -u "$idle_fd" _ || true
  done
}

# SIGTERM/SIGINT: stop now, even mid-wait.
stop() {
  OBJECT=""
  log INFO "stopping" signal "$1"
  exit 0
}
trap 'stop TERM' TERM
trap 'stop INT' INT

reconcile_id=0
log INFO "starting" interval_s "$INTERVAL"
while true; do
  OBJECT=""
  trace poll.tick interval_s "$INTERVAL"
  poll
  idle
done
