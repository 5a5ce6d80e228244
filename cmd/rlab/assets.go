package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/cluster"
)

func newAssetsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "assets",
		Short: "Build or locate the control-plane binaries",
	}
	var kind bool
	build := &cobra.Command{
		Use:   "build",
		Short: "Build kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kubectl and kwok from source",
		Long: `Build the pinned control plane from Go modules into the per-user cache
($XDG_CACHE_HOME/rlab/controlplane/<version>, or $RLAB_ASSETS). The first build
takes several minutes; later runs only check stamps.

With --kind, also build the offline kind node image (` + cluster.OfflineNodeImage + `) for
--backend kind: kubelet and kubeadm at the same version, a Debian rootfs, the
control-plane images and rlab's echo server preloaded. Needs root (debootstrap)
and a running Docker (as root: scripts/setup-docker.sh).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env := func(k string) string {
				if k == "KUBEBUILDER_ASSETS" {
					return "" // build into rlab's own directory, never someone else's
				}
				return os.Getenv(k)
			}
			dir, _ := assets.Dir(env)
			if kind {
				return assets.BuildKind(cmd.Context(), env, dir, cmd.ErrOrStderr())
			}
			return assets.Build(cmd.Context(), env, dir, cmd.ErrOrStderr())
		},
	}
	build.Flags().BoolVar(&kind, "kind", false, "also build the offline kind node image (root and Docker needed)")
	cmd.AddCommand(build)
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
