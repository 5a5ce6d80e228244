#!/usr/bin/env bash
# my-operator.sh: an Echo operator of your own, in bash.
#
# The course's first operator, cut down: every few seconds it lists the
# Echoes and, for each one, makes sure a Deployment echo-<name> runs the
# Echo's message. Lesson 12 of Reconcile Lab (rlab lesson start 12) has you
# improve it until rlab check passes. What it lacks, a step of the lesson each:
#
#   2. it writes no status: kubectl get ec shows an empty READY
#   3. it creates the Deployment once and never looks at it again, so
#      a new spec.replicas, or a hand scale, is never followed
#   4. the Deployment has no ownerReference: deleting an Echo leaves
#      its Deployment behind
#   5. the message goes into the YAML as it is: a double quote or a
#      backslash in it breaks the file
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
  # Step 2 and 3: compute the desired Deployment, and create it if there is none.
  if ! kubectl -n "$ns" get deployment "echo-$name" >/dev/null 2>&1; then
    echo "creating Deployment echo-$name"
    desired_deployment "$name" "$message" "$replicas" | kubectl -n "$ns" apply -f -
  fi
  # Step 4: write status. (Not yet.)
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
