// Command rlab is Reconcile Lab: a terminal sandbox for learning how
// Kubernetes operators work, on a real local control plane.
package main

import (
	"fmt"
	"os"

	"github.com/kkloud/rlab/sim/proc"
)

func main() {
	proc.MaybeRunWrapper() // never returns when rlab runs as the exec wrapper
	if err := newRootCmd().Execute(); err != nil {
		var ec exitCode
		if asExit(err, &ec) {
			os.Exit(int(ec))
		}
		fmt.Fprintln(os.Stderr, "rlab:", err)
		os.Exit(1)
	}
}
