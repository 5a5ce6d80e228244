// Package proc starts and stops rlab's child processes so that none outlives
// rlab: each child runs in its own process group with a parent-death signal,
// and its pid is recorded in a directory so the next run can reap what a
// killed run left behind.
//
// Processes rlab does not start itself (kube-apiserver and etcd, started by
// envtest) go through an exec wrapper, a hidden mode of the rlab binary that sets
// the parent-death signal on itself, records its pid and execs the real binary.
package proc
