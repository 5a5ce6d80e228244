package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/sim/assets"
)

func newAssetsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "assets",
		Short: "Build or locate the control-plane binaries",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "build",
		Short: "Build kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kubectl and kwok from source",
		Long: `Build the pinned control plane from Go modules into the per-user cache
($XDG_CACHE_HOME/rlab/controlplane/<version>, or $RLAB_ASSETS). The first build
takes several minutes; later runs only check stamps.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env := func(k string) string {
				if k == "KUBEBUILDER_ASSETS" {
					return "" // build into rlab's own directory, never someone else's
				}
				return os.Getenv(k)
			}
			dir, _ := assets.Dir(env)
			return assets.Build(cmd.Context(), env, dir, cmd.ErrOrStderr())
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "path",
		Short: "Print the directory holding the control-plane binaries (its last line)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := assets.Find(os.Getenv)
			var miss *assets.MissingError
			if errors.As(err, &miss) {
				fmt.Fprintln(cmd.ErrOrStderr(), "rlab:", err)
				return exitCode(1)
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), dir)
			return nil
		},
	})
	return cmd
}
