#!/usr/bin/env bash
# watch-operator.sh VARIANT: an Echo operator in bash that watches instead of
# polling, kept as a fixture of `rlab check`. It finds its cluster the way rlab
# hands it over: KUBECONFIG, WATCH_NAMESPACE and ECHO_IMAGE.
#
# Two `kubectl get --watch` (Echoes, and the Deployments it owns) print one
# Echo name per event; the names that arrive together are reconciled once
# each: apply the Deployment the Echo asks for, then write status.ready.
#
# VARIANT is "good", or one deliberate mistake that rlab check must catch:
#   no-owner          sets no ownerReference on the Deployment
#   no-status         never writes status.ready
#   only-echoes       watches Echoes only (waits for the rollout instead)
#   deletes-children  deletes the Deployment itself when its Echo is gone
#   lists-pods        counts ready pods by listing them (not in its Role)
#   two-writers       good, but elects no leader: two replicas both write
set -u
variant=${1:-good}
case $variant in
  good | no-owner | no-status | only-echoes | deletes-children | lists-pods | two-writers) ;;
  *) echo "unknown variant $variant" >&2; exit 2 ;;
esac
ns=${WATCH_NAMESPACE:?WATCH_NAMESPACE is not set}
image=${ECHO_IMAGE:?ECHO_IMAGE is not set}
kc=(kubectl --namespace "$ns" --request-timeout=10s)

owner='"ownerReferences":[{"apiVersion":"kkloud.io/v1","kind":"Echo","name":"{{.metadata.name}}","uid":"{{.metadata.uid}}","controller":true,"blockOwnerDeletion":true}],'
[[ $variant == no-owner ]] && owner=''
labels='{"app.kubernetes.io/name":"echo","app.kubernetes.io/instance":"{{.metadata.name}}","app.kubernetes.io/managed-by":"watch-operator"}'
# The Deployment an Echo asks for, rendered by kubectl from the Echo itself;
# printf %q quotes the message as JSON would (for what a test sends).
deployment='{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"echo-{{.metadata.name}}",'$owner'"labels":'$labels'},
"spec":{"replicas":{{.spec.replicas}},"selector":{"matchLabels":{"app.kubernetes.io/instance":"{{.metadata.name}}"}},
"template":{"metadata":{"labels":'$labels'},"spec":{"containers":[{"name":"echo","image":"'$image'","imagePullPolicy":"IfNotPresent",
"args":[{{printf "%q" (printf "-text=%s" .spec.message)}}],"ports":[{"name":"http","containerPort":5678,"protocol":"TCP"}]}]}}}}'

reconcile() {
  local name=$1 out ready
  if ! out=$("${kc[@]}" get echo "$name" -o go-template="$deployment" 2>&1); then
    if [[ $out == *NotFound* && $variant == deletes-children ]]; then
      # --raw sends the DELETE as it is: `kubectl delete deployment` would
      # GET it first and, the garbage collector being quicker, send nothing.
      "${kc[@]}" delete --raw "/apis/apps/v1/namespaces/$ns/deployments/echo-$name" >&2
    fi
    return 0
  fi
  printf '%s\n' "$out" | "${kc[@]}" apply --server-side --field-manager=watch-operator --force-conflicts -f - >&2 || return 0
  [[ $variant == no-status ]] && return 0
  [[ $variant == only-echoes ]] && "${kc[@]}" rollout status "deployment/echo-$name" --timeout=60s >&2
  if [[ $variant == lists-pods ]]; then
    ready=$("${kc[@]}" get pods -l "app.kubernetes.io/instance=$name" -o name | wc -l) || return 0
    ready="$ready/$("${kc[@]}" get echo "$name" -o go-template='{{.spec.replicas}}')"
  else
    ready=$("${kc[@]}" get deployment "echo-$name" -o go-template='{{or .status.readyReplicas 0}}/{{.spec.replicas}}') || return 0
  fi
  "${kc[@]}" patch echo "$name" --subresource=status --type=merge -p "{\"status\":{\"ready\":\"$ready\"}}" >&2
}

# kubectl get --watch lists what is there first, then follows changes.
{
  "${kc[@]}" get echoes --watch --request-timeout=0 -o go-template='echo {{.metadata.name}}{{"\n"}}' &
  if [[ $variant != only-echoes ]]; then
    "${kc[@]}" get deployments --watch --request-timeout=0 -o go-template='deployment {{.metadata.name}}{{"\n"}}' &
  fi
  wait
} | while read -r kind name; do
  # A bash workqueue: names that arrive within 0.2 s are reconciled once.
  declare -A queue=()
  while :; do
    [[ $kind == deployment ]] && name=${name#echo-}
    queue[$name]=1
    read -r -t 0.2 kind name || break
  done
  for name in "${!queue[@]}"; do reconcile "$name"; done
  unset queue
done
