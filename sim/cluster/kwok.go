package cluster

import (
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

// FakeNodeAnnotation marks the Nodes kwok manages.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// kwokConfig is kwok's configuration: its options (every parallelism set, since
// a zero makes kwok exit) followed by the "fast" Stages it plays. The Stages come
// from the kwok module itself, so they match the kwok binary built from it.
func kwokConfig() string {
	options := `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  manageAllNodes: false
  manageNodesWithAnnotationSelector: ` + FakeNodeAnnotation + `=fake
  serverAddress: 127.0.0.1:0
  nodeLeaseDurationSeconds: 40
  nodeLeaseParallelism: 4
  nodePlayStageParallelism: 4
  podPlayStageParallelism: 4
  podsOnNodeSyncParallelism: 4
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
`
	docs := []string{options,
		nodefast.DefaultNodeInit,
		nodeheartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	for i := range docs {
		docs[i] = strings.TrimSpace(docs[i])
	}
	return strings.Join(docs, "\n---\n") + "\n"
}
