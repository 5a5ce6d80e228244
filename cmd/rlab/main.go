// Command rlab is Reconcile Lab: a terminal sandbox for learning how
// Kubernetes operators work, on a real local control plane.
package main

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// launched is when the process began running Go code: `rlab run --timings`
// counts from it.
var launched = time.Now()

func main() {
	err := newRootCmd().Execute()
	var ec exitCode
	switch {
	case err == nil:
		return
	case errors.As(err, &ec): // already said
		os.Exit(int(ec))
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(os.Stderr, "rlab:", err)
		os.Exit(130)
	}
	fmt.Fprintln(os.Stderr, "rlab:", err) // every other error is said here, once
	os.Exit(1)
}
