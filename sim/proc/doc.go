// Package proc starts and stops rlab's child processes so that none outlives
// rlab, and records their pids in a directory so the next run can reap
// (Reap) what a killed run left behind.
//
// Two mechanisms kill a child whose rlab died, even by SIGKILL:
//
//   - The lifeline, on every platform. rlab holds the write end of a pipe and
//     never writes to it; the kernel closes it when rlab dies. Each child runs
//     in a process group led by a watcher, a tiny shell that reads the other
//     end, sees EOF and SIGKILLs its whole group (the child and whatever the
//     child started there). The child keeps its own pid; Stop and Signal
//     signal the group, and the watcher ignores all but SIGKILL, SIGSTOP and
//     SIGCONT, so it outlives the child's graceful exit.
//   - The parent-death signal, on Linux only (ChildAttr): the child gets
//     SIGKILL when rlab dies. Set NoPdeathsigEnv to turn it off and leave the
//     lifeline alone, as the tests do.
//
// The control plane (etcd and kube-apiserver included: the envtest backend
// starts them itself) and the operators' replicas all go through Start or
// StartCmd. What a child starts in turn (the kubectl a shell operator runs)
// stays in the child's process group, whose watcher covers it.
package proc
