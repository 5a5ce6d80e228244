#!/usr/bin/env bash
# my-operator.sh: an Echo operator in bash, with one bug in it.
#
# Exercise 2 of lesson 15 of Reconcile Lab (rlab lesson start 15): lesson
# 12's finished operator, changed in one place. Every poll it lists the
# Echoes and reconciles each one. Run it, watch what goes wrong, find the
# bug, fix it.
#
# rlab runs it with KUBECONFIG (the operator's own identity, with the
# course's Role), WATCH_NAMESPACE (where its Echoes are) and ECHO_IMAGE (what
# Echo pods run) set, and its kubectl first on PATH. What it prints goes to
# its log. No `set -e`: one failed kubectl must not end the loop.
set -u
ns=${WATCH_NAMESPACE:?WATCH_NAMESPACE is not set}
image=${ECHO_IMAGE:?ECHO_IMAGE is not set}
interval=${INTERVAL:-3} # seconds between two polls

# desired_deployment NAME MESSAGE REPLICAS prints the Deployment Echo NAME asks for.
desired_deployment() {
  local name=$1 message=$2 replicas=$3
  # The message goes between double quotes in YAML: escape \, " and newlines.
  message=${message//\\/\\\\}
  message=${message//\"/\\\"}
  message=${message//$'\n'/\\n}
  cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: echo-$name
  labels: {app.kubernetes.io/name: echo, app.kubernetes.io/instance: $name}
spec:
  replicas: $replicas
  selector:
    matchLabels: {app.kubernetes.io/instance: $name}
  template:
    metadata:
      labels: {app.kubernetes.io/name: echo, app.kubernetes.io/instance: $name}
    spec:
      containers:
        - name: echo
          image: $image
          args: ["-text=$message"]
EOF
}

# reconcile_echo NAME makes the cluster match what Echo NAME asks for.
reconcile_echo() {
  local name=$1 message replicas
  # Step 1: fetch the Echo (gone since the list: nothing to do).
  message=$(kubectl -n "$ns" get echo "$name" -o jsonpath='{.spec.message}') || return 0
  replicas=$(kubectl -n "$ns" get echo "$name" -o jsonpath='{.spec.replicas}') || return 0
  # Step 2 and 3: compute the desired Deployment, and create or update it.
  # kubectl apply sends only what differs from the Deployment that is
  # there, and nothing when nothing does.
  desired_deployment "$name" "$message" "$replicas" | kubectl -n "$ns" apply -f -
  # Step 4: write status.
  update_status "$name" "$replicas"
}

# update_status NAME REPLICAS writes status.ready = <ready pods>/<replicas>
# to the Echo's status subresource.
update_status() {
  local name=$1 replicas=$2 ready
  ready=$(kubectl -n "$ns" get deployment "echo-$name" -o jsonpath='{.status.readyReplicas}') || return 0
  kubectl -n "$ns" patch echo "$name" --subresource=status --type=merge \
    -p "{\"status\":{\"ready\":\"${ready:-0}/$replicas\"}}"
}

# Not part of an operator: while rlab runs this file, save a change and the
# loop starts again as your new version at its next poll.
me=$(cksum <"$0")

while true; do
  for name in $(kubectl -n "$ns" get echoes -o jsonpath='{.items[*].metadata.name}'); do
    reconcile_echo "$name"
  done
  sleep "$interval"
  [[ $(cksum <"$0") == "$me" ]] || { echo "$0 changed: running it again"; exec bash "$0"; }
done
