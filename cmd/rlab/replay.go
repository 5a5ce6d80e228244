package main

import (
	"fmt"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/tui/replay"
)

type replayFlags struct {
	Speed  float64
	Paused bool
}

func newReplayCmd() *cobra.Command {
	f := replayFlags{}
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Play the screen from a recording (rlab up --record FILE), with no cluster",
		Long: `Play a recording made with ` + "`rlab up --record FILE`" + ` (or the JSON lines of
` + "`rlab run --output json`" + `) through the same screen, with no cluster: for slides,
classrooms without the control-plane build, and tests.

Keys: space play/pause, < and > slower/faster, ← and → seek 10 s, 0 from the
start; the screen's own keys (tab, f, t, T, p, ↑/↓, ?) work as usual; q quits.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkSpeed(f.Speed); err != nil {
				return err
			}
			fh, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			rec, err := replay.Load(fh)
			fh.Close()
			if err != nil {
				return fmt.Errorf("replay %s: %w", args[0], err)
			}
			m := replay.New(rec, replay.Options{Speed: f.Speed, Paused: f.Paused, Dark: true})
			if _, err := tea.NewProgram(m, tea.WithFPS(30)).Run(); err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().Float64Var(&f.Speed, "speed", 1, "playback speed (1 = as recorded; 1/16 to 64)")
	cmd.Flags().BoolVar(&f.Paused, "paused", false, "start paused (space plays)")
	return cmd
}
