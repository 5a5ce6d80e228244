package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/cluster"
)

func newAssetsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "assets",
		Short: "Get, fetch, build, locate, serve, pack or unpack the control-plane binaries",
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
			dir := assets.OwnDir(os.Getenv) // never someone else's KUBEBUILDER_ASSETS
			if kind {
				return assets.BuildKind(cmd.Context(), os.Getenv, dir, cmd.ErrOrStderr())
			}
			return assets.Build(cmd.Context(), os.Getenv, dir, cmd.ErrOrStderr())
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
	cmd.AddCommand(newAssetsGetCmd(), newAssetsFetchCmd(), newAssetsServeCmd(), newAssetsPackCmd(), newAssetsUnpackCmd())
	return cmd
}

func newAssetsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get",
		Short: "Install what is missing of the control plane: the release binaries, else a build from source",
		Long: `Install the control plane's missing binaries into the per-user cache
($XDG_CACHE_HOME/rlab/controlplane/<version>, or $RLAB_ASSETS), from where
` + assets.SourceEnv + ` says (` + "`make assets`" + ` runs this):

  unset    the official release binaries (kube-apiserver, kube-controller-manager,
           kube-scheduler and kubectl from the Kubernetes release downloads; etcd
           and kwok from their GitHub releases), each checked against its
           published sha256; whatever they cannot give (no network, a checksum
           that does not match) is built from source instead
  release  the release binaries only
  source   the build from source only (several minutes the first time)
  URL      a classroom mirror only (` + "`rlab assets serve`" + ` on the instructor's machine)

Binaries already installed are kept, but for those built here or unpacked
that the build script would rebuild (a new recipe, or a new Go for one built
here): those are got anew. GITHUB_TOKEN, when set, goes to GitHub's API.`,
		Example: `  rlab assets get
  RLAB_ASSETS_SOURCE=http://192.168.1.10:8080 rlab assets get`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			if _, err := assets.ParseSource(os.Getenv(assets.SourceEnv)); err != nil {
				return err
			}
			dir := assets.OwnDir(os.Getenv)
			if err := assets.Get(ctx, os.Getenv, dir, cmd.ErrOrStderr()); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), dir)
			return nil
		},
	}
}

func newAssetsFetchCmd() *cobra.Command {
	var from, platform string
	cmd := &cobra.Command{
		Use:   "fetch [--from URL]",
		Short: "Download the control plane's release binaries (or a classroom mirror's), checksums verified",
		Long: `Download the control plane's missing binaries into the per-user cache,
each checked against its sha256 before it is renamed into place (a corrupt or
cut-short download is refused, naming the file and both checksums).

With no --from: the official release binaries, and nothing else (no build from
source; ` + "`rlab assets get`" + ` falls back to one). With --from: a classroom mirror,
` + "`rlab assets serve`" + ` on the instructor's machine, checked against its index.
A fetch that stops half-way leaves only whole binaries; the next one fetches
the rest. Progress (bytes, rate) goes to stderr, the directory to stdout.`,
		Example: `  rlab assets fetch
  rlab assets fetch --from http://192.168.1.10:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := assets.Host()
			if platform != "" {
				ps, err := assets.ParsePlatforms(platform)
				if err != nil || len(ps) != 1 {
					return fmt.Errorf("--platform %s: want one of %s", platform, strings.Join(platformStrings(assets.Supported), ", "))
				}
				p = ps[0]
			}
			if from != "" {
				if src, err := assets.ParseSource(from); err != nil || src.Kind != "mirror" {
					return fmt.Errorf("--from %s: want a mirror's URL, e.g. http://192.168.1.10:8080", from)
				}
			}
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			dir := assets.PlatformDir(os.Getenv, p)
			res, err := assets.Fetch(ctx, assets.FetchOptions{Dir: dir, Platform: p, From: from, Progress: cmd.ErrOrStderr(),
				GitHubToken: os.Getenv("GITHUB_TOKEN")})
			if res != nil && len(res.Installed) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "fetched %d binaries (%s) in %.1fs\n", len(res.Installed), assets.MB(res.Bytes()), res.Elapsed.Seconds())
			}
			if err != nil {
				if ctx.Err() != nil && cmd.Context().Err() == nil {
					return fmt.Errorf("interrupted; the binaries fetched whole are kept: %w", err)
				}
				return err
			}
			if len(res.Installed) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "nothing to fetch: all %d binaries are installed\n", len(res.Present))
			}
			fmt.Fprintln(cmd.OutOrStdout(), dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "a classroom mirror's URL (rlab assets serve), e.g. http://192.168.1.10:8080")
	cmd.Flags().StringVar(&platform, "platform", "", "GOOS/GOARCH to fetch for (default this machine's), into its own directory beside the host's")
	return cmd
}

func newAssetsServeCmd() *cobra.Command {
	var addr, archive string
	cmd := &cobra.Command{
		Use:   "serve --addr HOST:PORT [--archive FILE]",
		Short: "Serve the control plane to students' machines on the LAN (a classroom mirror)",
		Long: `Serve this machine's control plane over HTTP, for students' rlabs to fetch
with ` + "`rlab assets fetch --from http://HOST:PORT`" + ` (or ` + assets.SourceEnv + `=http://HOST:PORT
make run). It serves the per-user cache (the host's control plane and any
other platform's beside it, cross-built by ` + "`rlab assets pack`" + ` or fetched
with ` + "`rlab assets fetch --platform`" + `), or, with
--archive, an ` + "`rlab assets pack`" + ` archive for every platform in it, checked and
unpacked into a temporary directory first. Each file is listed in an index
with its sha256, which the student's rlab checks. Runs until interrupted.`,
		Example: `  rlab assets serve --addr 0.0.0.0:8080
  rlab assets serve --addr 0.0.0.0:8080 --archive rlab-offline.tar.gz`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return fmt.Errorf("--addr %s: want HOST:PORT, e.g. 0.0.0.0:8080 (%w)", addr, err)
			}
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			return assets.Serve(ctx, assets.ServeOptions{Env: os.Getenv, Addr: addr, Archive: archive, Log: cmd.ErrOrStderr(),
				Ready: func(a string) { fmt.Fprintln(cmd.OutOrStdout(), "http://"+a) }})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "0.0.0.0:8080", "HOST:PORT to listen on")
	cmd.Flags().StringVar(&archive, "archive", "", "serve this `FILE`, an archive made by rlab assets pack, instead of the cache")
	return cmd
}

func newAssetsPackCmd() *cobra.Command {
	var platforms, output string
	cmd := &cobra.Command{
		Use:   "pack [--platform P1,P2] [-o FILE]",
		Short: "Write one archive with rlab and the control plane for offline installs",
		Long: `Build rlab and the control plane for each platform and write them into one
.tar.gz with a manifest (versions, and each file's size and sha256), for
machines with no Go and no network: ` + "`rlab assets unpack FILE`" + ` installs it.

Needs Go and the module proxy (or a warm module cache). The host's control
plane is reused from the per-user cache when up to date; another platform's is
cross-built (CGO_ENABLED=0) into its own directory beside it, which takes
minutes per platform the first time. Progress goes to stderr.

Platforms: ` + strings.Join(platformStrings(assets.Supported), ", ") + `.`,
		Example: `  rlab assets pack --platform linux/amd64,darwin/arm64 -o rlab-offline.tar.gz`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, err := assets.ParsePlatforms(platforms)
			if err != nil {
				return fmt.Errorf("--platform: %w", err)
			}
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			res, err := assets.Pack(ctx, assets.PackOptions{
				Env: os.Getenv, Platforms: ps, Output: output, Version: version, Progress: cmd.ErrOrStderr(),
			})
			if err != nil {
				if ctx.Err() != nil && cmd.Context().Err() == nil {
					return fmt.Errorf("interrupted; nothing written: %w", err)
				}
				return err
			}
			m, w := res.Manifest, cmd.OutOrStdout()
			fmt.Fprintf(w, "wrote %s, %s: rlab %s, Kubernetes %s, kwok %s, built with %s\n",
				res.Output, assets.MB(res.Size), m.Rlab, m.Kubernetes, m.Kwok, m.Go)
			for _, pf := range m.Platforms {
				fmt.Fprintf(w, "  %-13s %d files, %s, %s packed\n", pf.Platform, len(pf.Files),
					assets.MB(res.Raw[pf.Platform]), assets.MB(res.Compressed[pf.Platform]))
			}
			name := filepath.Base(res.Output)
			fmt.Fprintf(w, "on each machine, with no Go and no network needed:\n")
			for _, pf := range m.Platforms {
				fmt.Fprintf(w, "  %-13s tar -xzf %s %s/rlab && ./%s/rlab assets unpack %s\n",
					pf.Platform, name, pf.Platform.Slug(), pf.Platform.Slug(), name)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&platforms, "platform", string(assets.Host()), "comma-separated GOOS/GOARCH list")
	cmd.Flags().StringVarP(&output, "output", "o", "", "archive to write (default rlab-VERSION-PLATFORMS.tar.gz)")
	return cmd
}

func platformStrings(ps []assets.Platform) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

func newAssetsUnpackCmd() *cobra.Command {
	var binDir string
	cmd := &cobra.Command{
		Use:   "unpack FILE",
		Short: "Verify an archive made by `rlab assets pack` and install it for this machine",
		Long: `Check every file of the archive against its manifest, then install this
platform's control plane where rlab looks for it (the per-user cache,
$XDG_CACHE_HOME/rlab/controlplane/<version>, or $RLAB_ASSETS) and its rlab
binary into --bin-dir. Needs no Go and no network. A damaged archive installs
nothing. Each destination is replaced in one rename.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			if binDir != "" {
				abs, err := filepath.Abs(binDir)
				if err != nil {
					return fmt.Errorf("--bin-dir: %w", err)
				}
				binDir = abs
			}
			in, err := assets.Unpack(ctx, assets.UnpackOptions{Env: os.Getenv, Archive: args[0], BinDir: binDir})
			if err != nil {
				return err
			}
			m, w := in.Manifest, cmd.OutOrStdout()
			fmt.Fprintf(w, "verified %d files of %s (rlab %s, Kubernetes %s, kwok %s; platforms %s)\n",
				in.Verified, args[0], m.Rlab, m.Kubernetes, m.Kwok, strings.Join(platformStrings(m.PlatformList()), ", "))
			fmt.Fprintf(w, "control plane %s for %s: %s\n", m.Kubernetes, in.Platform, in.ControlPlane)
			fmt.Fprintf(w, "rlab %s: %s\n", m.Rlab, in.Rlab)
			if kb := os.Getenv("KUBEBUILDER_ASSETS"); kb != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: KUBEBUILDER_ASSETS=%s is set, and rlab looks there first: unset it to use what was just installed\n", kb)
			}
			dir := filepath.Dir(in.Rlab)
			if slices.Contains(filepath.SplitList(os.Getenv("PATH")), dir) {
				fmt.Fprintf(w, "next: rlab up\n")
			} else {
				fmt.Fprintf(w, "next: %s up\n      (or add it to your PATH: export PATH=\"%s:$PATH\")\n", in.Rlab, dir)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&binDir, "bin-dir", "", "where to put the rlab binary (default $XDG_CACHE_HOME/rlab/bin, ~/.cache/rlab/bin)")
	return cmd
}
