package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func newEnvCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: "Print `export KUBECONFIG=...` for the running sandbox",
		Long: `Print an export line that points your own kubectl at the running sandbox:

  eval "$(rlab env)"
  kubectl get echoes -A`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := stateDir()
			if err != nil {
				return err
			}
			pid := d.Running()
			if pid == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "rlab: no sandbox is running; start one with `rlab run` (or `make run`)")
				return exitCode(1)
			}
			if _, err := os.Stat(d.Kubeconfig()); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "rlab: the sandbox (pid %d) is still starting; try again in a moment (its kubeconfig is written once the cluster is ready)\n", pid)
				return exitCode(1)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "export KUBECONFIG=%s\n", d.Kubeconfig())
			return nil
		},
	}
}
