package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/sim/assets"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print rlab's version and the control plane version it builds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "rlab %s\ncontrol plane %s (envtest backend)\n", version, assets.KubeVersion)
			return nil
		},
	}
}
