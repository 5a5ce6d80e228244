package check

import (
	"strings"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/sim/ship"
	"github.com/kkloud/rlab/sim/supervisor"
)

// inClusterTarget is a sandbox whose operator under test runs in the
// cluster as a Deployment (sandbox.Custom.Shipped): its replicas are the
// Deployment's pods, in slots (ship.Pods); killing one deletes its pod; its
// log is the pods'. The cluster, the Echoes and rlab's clients are the
// sandbox's.
type inClusterTarget struct {
	sandboxTarget
	pods *ship.Pods
}

// InCluster is the Target of sb whose operator runs as the pods pods
// follows. Run it with Options.InCluster and a RequestLog of
// ship.SourcePrefix.
func InCluster(sb *sandbox.Sandbox, pods *ship.Pods) Target {
	return inClusterTarget{Sandbox(sb).(sandboxTarget), pods}
}

// Replicas are the pods' slots.
func (t inClusterTarget) Replicas(style.Style) []string { return t.pods.Replicas() }

// LogFile is the logs of the pods of slot replica.
func (t inClusterTarget) LogFile(_ style.Style, replica string) string {
	return t.pods.LogFile(replica)
}

// ReplicaStatuses are the slots as replicas.
func (t inClusterTarget) ReplicaStatuses() []supervisor.Status { return t.pods.Statuses() }

// KillReplica deletes the pod of replica name ("mine/a").
func (t inClusterTarget) KillReplica(name string) error {
	_, slot, _ := strings.Cut(name, "/")
	return t.pods.Kill(slot)
}
