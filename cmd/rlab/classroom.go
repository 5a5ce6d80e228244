package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kkloud/rlab/lessons"
	echov1 "github.com/kkloud/rlab/operators/api/v1"
	"github.com/kkloud/rlab/sim/backend"
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

Each student's rlab writes their progress (lesson, step, how each step went,
their predictions) to their own ConfigMap in rlab-classroom, which only they
and you may read. status shows students × lessons, then every student's
Echoes and Lease holders; watch is a live screen for the projector, those who
need help first; reset sends a student back to the start of a lesson;
teardown removes it all.`,
	}
	var (
		kf       kubeFlags
		students int
		dir      string
		ttl      time.Duration
		server   string
		dryRun   bool
		force    bool
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
			needs, err := sharedNeeds()
			if err != nil {
				return err
			}
			files, err := classroom.Prepare(cmd.Context(), cfg, classroom.Options{
				Students: students, Dir: dir, TTL: ttl, Server: server, Log: cmd.OutOrStdout(),
				Needs: needs, DryRun: dryRun, Force: force,
			})
			if err != nil {
				return err
			}
			if dryRun {
				fmt.Fprintln(cmd.OutOrStdout(), "dry run: nothing was made or changed")
				return nil
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
	prepare.Flags().BoolVar(&dryRun, "dry-run", false, "say whether the class fits the cluster, lesson by lesson, and the quotas, and change nothing")
	prepare.Flags().BoolVar(&force, "force", false, "prepare a class the capacity plan says does not fit")
	_ = prepare.MarkFlagRequired("students")

	status := &cobra.Command{
		Use:   "status",
		Short: "Show students × lessons, then each student's Echoes and whether their operators hold their Leases",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kf.config()
			if err != nil {
				return err
			}
			reps, err := classroom.Reports(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if len(reps) > 0 {
				course, err := courseColumns()
				if err != nil {
					return err
				}
				if err := classroom.ProgressTable(cmd.OutOrStdout(), reps, course); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout())
			}
			return classroom.Status(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	kf.register(status)
	cmd.AddCommand(newClassroomWatchCmd(), newClassroomResetCmd())
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

// courseColumns are the course's lessons, as the instructor's tables show
// them.
func courseColumns() ([]classroom.Column, error) {
	all, err := lessons.Load()
	if err != nil {
		return nil, err
	}
	var out []classroom.Column
	for _, l := range all {
		out = append(out, classroom.Column{Number: l.Number, Steps: len(l.Steps)})
	}
	return out, nil
}

func newClassroomWatchCmd() *cobra.Command {
	var (
		kf    kubeFlags
		once  bool
		width int
	)
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "A live screen for the projector: one row per student, those who need help first",
		Long: `One row per student: the lesson and step they are on, the minutes on it, and
the check's last reason; first those whose step failed for good or whose
play failed (ERROR), then those on a step over 3 minutes whose check is not
passing (STUCK), the longest first. It follows the students' progress
ConfigMaps with one watch. q quits. --once prints the screen once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if width < 40 {
				return fmt.Errorf("--width %d: want at least 40 columns", width)
			}
			cfg, err := kf.config()
			if err != nil {
				return err
			}
			if once {
				reps, err := classroom.Reports(cmd.Context(), cfg)
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(cmd.OutOrStdout(), classroom.Board(reps, time.Now(), width))
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			m := &boardModel{width: width, now: time.Now()}
			p := tea.NewProgram(m, tea.WithContext(ctx))
			watchErr := make(chan error, 1)
			go func() {
				err := classroom.WatchReports(ctx, cfg, func(r []classroom.Report) { p.Send(reportsMsg(r)) })
				if err != nil {
					p.Send(watchErrMsg{err})
				}
				watchErr <- err
			}()
			_, err = p.Run()
			cancel()
			if werr := <-watchErr; werr != nil {
				return werr
			}
			if err != nil && !errors.Is(err, tea.ErrProgramKilled) && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("classroom watch: %w", err)
			}
			return nil
		},
	}
	kf.register(cmd)
	cmd.Flags().BoolVar(&once, "once", false, "print the screen once and exit")
	cmd.Flags().IntVar(&width, "width", 120, "columns, for --once (the screen's own width otherwise)")
	return cmd
}

type (
	reportsMsg  []classroom.Report
	watchErrMsg struct{ err error }
	boardTick   time.Time
)

// boardModel is classroom watch's screen: the board, redrawn when a
// report changes and every few seconds for the minutes on a step.
type boardModel struct {
	reps  []classroom.Report
	now   time.Time
	width int
	err   error
}

func boardTickCmd() tea.Cmd {
	return tea.Tick(5*time.Second, func(t time.Time) tea.Msg { return boardTick(t) })
}

func (m *boardModel) Init() tea.Cmd { return boardTickCmd() }

func (m *boardModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case reportsMsg:
		m.reps, m.now = msg, time.Now()
	case boardTick:
		m.now = time.Time(msg)
		return m, boardTickCmd()
	case watchErrMsg:
		m.err = msg.err
		return m, tea.Quit
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case tea.KeyPressMsg:
		if s := msg.String(); s == "q" || s == "ctrl+c" {
			return m, tea.Quit
		}
	}
	return m, nil
}

func (m *boardModel) View() tea.View {
	body := "waiting for the students' progress…\n"
	if m.reps != nil {
		body = classroom.Board(m.reps, m.now, m.width)
	}
	v := tea.NewView(body + "\nq quits\n")
	v.AltScreen = true
	return v
}

func newClassroomResetCmd() *cobra.Command {
	var (
		kf      kubeFlags
		student string
		lesson  int
	)
	cmd := &cobra.Command{
		Use:   "reset --student sK --lesson N",
		Short: "Send a student back to the start of lesson N, their sandbox brought back to where it starts",
		Long: `Ask student sK's rlab to bring their namespaces back to where lesson N starts
(the operators, their switches and faults, the Echoes) and open lesson N at
step 1, how it went before forgotten. Their rlab does it at once if it has a
lesson open (rlab lesson start), or when they next start one; classroom watch
then shows them on lesson N, step 1. A lesson with an operator of its own
(12, 15, 20), or one their backend cannot run, is refused by their rlab,
which says why: they quit and run rlab lesson start N --reset.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := lessons.Load()
			if err != nil {
				return err
			}
			if _, err := lessons.Find(all, lesson); err != nil {
				return fmt.Errorf("--lesson %d: %w", lesson, err)
			}
			cfg, err := kf.config()
			if err != nil {
				return err
			}
			id, err := classroom.RequestReset(cmd.Context(), cfg, student, lesson)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "asked %s's rlab to start lesson %d again (request %s)\n", student, lesson, id)
			return nil
		},
	}
	kf.register(cmd)
	cmd.Flags().StringVar(&student, "student", "", "the `STUDENT` (s1, s2, ...)")
	cmd.Flags().IntVar(&lesson, "lesson", 0, "the lesson `N` to start again")
	_ = cmd.MarkFlagRequired("student")
	_ = cmd.MarkFlagRequired("lesson")
	return cmd
}

// sharedNeeds are the lessons allowed on a shared cluster, each with the
// most it holds in one namespace: what the capacity plan and the quota are
// computed from.
func sharedNeeds() ([]classroom.Need, error) {
	all, err := lessons.Load()
	if err != nil {
		return nil, err
	}
	var needs []classroom.Need
	for _, l := range all {
		if !l.RunsOn(backend.Kubeconfig.Name) {
			continue
		}
		f := l.Footprint()
		needs = append(needs, classroom.Need{Lesson: l.Number, Title: l.Title, Echoes: f.Echoes, Pods: f.Pods})
	}
	return needs, nil
}
