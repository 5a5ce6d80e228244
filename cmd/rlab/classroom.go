package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/feature/classroom"
)

// kubeFlags name the instructor's cluster.
type kubeFlags struct{ Kubeconfig, Context string }

func (f *kubeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig `FILE` (default $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&f.Context, "context", "", "kubeconfig `CONTEXT` (default the current context)")
}

func (f kubeFlags) config() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

func newClassroomCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "classroom",
		Short: "Prepare a shared cluster for a workshop (for the instructor, with cluster-admin)",
		Long: `Prepare one shared cluster for a class. prepare installs the Echo CRD and
gives each student (s1, s2, ...) three namespaces (rlab-sN-echo-shell,
-echo-clientgo, -echo-runtime), the operators' ServiceAccounts and Roles, and a
kubeconfig that may do only what the lessons need in those namespaces. Hand
each student their file; they run

  rlab up --backend kubeconfig --kubeconfig sN.kubeconfig

status lists every student's Echoes and Lease holders; teardown removes it all.`,
	}
	var (
		kf       kubeFlags
		students int
		dir      string
		ttl      time.Duration
		server   string
	)
	prepare := &cobra.Command{
		Use:   "prepare",
		Short: "Install the Echo CRD and make each student's namespaces, identities and kubeconfig",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkPrepare(students, dir, ttl, server); err != nil {
				return err
			}
			cfg, err := kf.config()
			if err != nil {
				return err
			}
			files, err := classroom.Prepare(cmd.Context(), cfg, classroom.Options{
				Students: students, Dir: dir, TTL: ttl, Server: server, Log: cmd.OutOrStdout(),
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d kubeconfigs in %s (tokens valid for %s); a student runs:\n  rlab up --backend kubeconfig --kubeconfig %s\n",
				len(files), dir, ttl, files[0])
			return nil
		},
	}
	kf.register(prepare)
	prepare.Flags().IntVar(&students, "students", 0, "number of students (required)")
	prepare.Flags().StringVar(&dir, "out", "classroom", "`DIR` for the students' kubeconfigs")
	prepare.Flags().DurationVar(&ttl, "ttl", cluster.TokenTTL, "how long the students' tokens last")
	prepare.Flags().StringVar(&server, "server", "", "apiserver `URL` for the students' kubeconfigs (default: the one in yours)")
	_ = prepare.MarkFlagRequired("students")

	status := &cobra.Command{
		Use:   "status",
		Short: "List each student's Echoes and whether their operators hold their Leases",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kf.config()
			if err != nil {
				return err
			}
			return classroom.Status(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	kf.register(status)
	teardown := &cobra.Command{
		Use:   "teardown",
		Short: "Remove every student's namespaces, the classroom's identities and the CRD it installed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kf.config()
			if err != nil {
				return err
			}
			return classroom.Teardown(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	kf.register(teardown)
	cmd.AddCommand(prepare, status, teardown)
	return cmd
}

func newCRDCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "crd",
		Short: "Print the Echo CRD, for an administrator to apply: rlab crd | kubectl apply -f -",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(echov1.CRDYAML)
			return err
		},
	}
}
