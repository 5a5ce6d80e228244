package tui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/kkloud/rlab/lessons/lessonview"
	"github.com/kkloud/rlab/sim/marks"
	"github.com/kkloud/rlab/tui/internal/fixture"
)

// appWaitFor waits until the program has written text (the model itself
// belongs to the program's goroutine).
// Each wait reads the output from where the last one stopped, so a wait
// names every text it needs.
func appWaitFor(t *testing.T, tm *teatest.TestModel, texts ...string) {
	t.Helper()
	// The renderer moves the cursor over runs of blanks: compare without them.
	squeeze := func(s string) string { return strings.ReplaceAll(s, " ", "") }
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		out := squeeze(ansi.Strip(string(b)))
		for _, text := range texts {
			if !strings.Contains(out, squeeze(text)) {
				return false
			}
		}
		return true
	},
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

// TestTUIAppUp: start-up phases, then the main screen, then q stops the
// sandbox (shown) and quits.
func TestTUIAppUp(t *testing.T) {
	stopped, release := make(chan struct{}), make(chan struct{})
	a := NewApp(AppOptions{
		Title: "starting the sandbox",
		Main:  Options{Info: Info{Backend: "envtest", Version: "v1.36.3"}, Frame: 10 * time.Millisecond},
		Stop: func() error {
			close(stopped)
			<-release // a stop that lasts until the test has seen it shown
			return nil
		},
	})
	tm := teatest.NewTestModel(t, a, teatest.WithInitialTermSize(160, 45))
	tm.Send(PhaseMsg{Name: "apiserver+etcd", Took: 3 * time.Second})
	appWaitFor(t, tm, "apiserver+etcd")
	tm.Send(ReadyMsg{Source: fixture.NewSource(fixture.Snapshot()), Actions: &fixture.Actions{}})
	appWaitFor(t, tm, "echo-hello")
	tm.Send(keyMsg("q"))
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("q did not stop the sandbox")
	}
	appWaitFor(t, tm, "stopping the sandbox")
	close(release)
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	if err, took := a.StopErr(); err != nil || took <= 0 {
		t.Fatalf("StopErr = %v, %v", err, took)
	}
	if a.Err() != nil || a.Interrupted() {
		t.Fatalf("Err = %v, Interrupted = %v", a.Err(), a.Interrupted())
	}
}

// TestTUIAppStartFailed: the error is shown in full; any key exits.
func TestTUIAppStartFailed(t *testing.T) {
	a := NewApp(AppOptions{Title: "starting the sandbox"})
	tm := teatest.NewTestModel(t, a, teatest.WithInitialTermSize(120, 40))
	tm.Send(FailedMsg{Err: errors.New("control plane v1.36.3 not built: kwok missing; build it with `rlab assets build`")})
	appWaitFor(t, tm, "press any key to exit", "kwok missing")
	tm.Send(keyMsg("x"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	if a.Err() == nil {
		t.Fatal("no start-up error")
	}
}

// TestTUIAppFailedBehind: a start-up that fails behind the open screen
// leaves the screen up until q, and rlab then exits with its error.
func TestTUIAppFailedBehind(t *testing.T) {
	a := NewApp(AppOptions{Title: "starting the sandbox", Stop: func() error { return nil },
		Main: Options{Info: Info{Backend: "envtest", Version: "v1.36.3"}, Frame: 10 * time.Millisecond}})
	tm := teatest.NewTestModel(t, a, teatest.WithInitialTermSize(160, 45))
	tm.Send(ReadyMsg{Source: fixture.NewSource(fixture.Snapshot()), Actions: &fixture.Actions{}})
	appWaitFor(t, tm, "echo-hello")
	failed := errors.New("start sandbox: kube-controller-manager exited (exit status 1) (logs in /tmp/logs)")
	tm.Send(BehindFailedMsg{Err: failed})
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	if !errors.Is(a.Err(), failed) || a.Interrupted() {
		t.Fatalf("Err = %v, Interrupted = %v: want the failure behind the screen", a.Err(), a.Interrupted())
	}
}

// TestTUIAppQuitWhileStartingBehind: q while the start-up goes on behind
// the screen stops it; what that stop ends is no failure.
func TestTUIAppQuitWhileStartingBehind(t *testing.T) {
	release := make(chan struct{})
	a := NewApp(AppOptions{Title: "starting the sandbox", Stop: func() error { <-release; return nil },
		Main: Options{Info: Info{Backend: "envtest", Version: "v1.36.3"}, Frame: 10 * time.Millisecond}})
	tm := teatest.NewTestModel(t, a, teatest.WithInitialTermSize(160, 45))
	tm.Send(ReadyMsg{Source: fixture.NewSource(fixture.Snapshot()), Actions: &fixture.Actions{}})
	appWaitFor(t, tm, "echo-hello")
	tm.Send(keyMsg("q"))
	appWaitFor(t, tm, "stopping the sandbox")
	tm.Send(BehindFailedMsg{Err: errors.New("start sandbox: the sandbox was stopped while starting: context canceled")})
	close(release)
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	if a.Err() != nil {
		t.Fatalf("Err = %v: a quit while starting is no failure", a.Err())
	}
}

// TestTUIAppQuitDuringStartUp: q cancels the start-up and waits for it.
func TestTUIAppQuitDuringStartUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a := NewApp(AppOptions{Title: "starting the sandbox", Cancel: cancel})
	tm := teatest.NewTestModel(t, a, teatest.WithInitialTermSize(120, 40))
	tm.Send(keyMsg("q"))
	<-ctx.Done()
	appWaitFor(t, tm, "interrupted: stopping what was started")
	tm.Send(FailedMsg{Err: ctx.Err()})
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	if !a.Interrupted() || a.Err() != nil {
		t.Fatalf("Interrupted = %v, Err = %v", a.Interrupted(), a.Err())
	}
}

// TestTUIAppSignals: a signal's quit becomes a clean stop, until done.
func TestTUIAppSignals(t *testing.T) {
	a := NewApp(AppOptions{})
	for _, msg := range []tea.Msg{tea.QuitMsg{}, tea.InterruptMsg{}} {
		if _, ok := Filter(a, msg).(StopMsg); !ok {
			t.Fatalf("%T not turned into a stop", msg)
		}
	}
	if _, ok := Filter(a, keyMsg("x")).(tea.KeyPressMsg); !ok {
		t.Fatal("a key was filtered")
	}
	a.state = stateDone
	if _, ok := Filter(a, tea.QuitMsg{}).(tea.QuitMsg); !ok {
		t.Fatal("quit held back once done")
	}
}

// frameLog is a terminal that notes when it was first written a frame
// holding text, and whether the marks file had the mark by then.
type frameLog struct {
	text, file string
	wrote      time.Time // the first write holding text
	markedThen bool      // the mark was written before that write
}

func (f *frameLog) Write(p []byte) (int, error) {
	if f.wrote.IsZero() && strings.Contains(ansi.Strip(string(p)), f.text) {
		f.wrote = time.Now()
		m, _ := marks.Read(f.file)
		_, f.markedThen = m[marks.ScreenMain]
	}
	return len(p), nil
}

// TestTUIAppMarksMainScreen: with $RLAB_MARKS set, the App marks
// marks.ScreenMain once its first frame of the main screen (the panes) is
// on the terminal: not during start-up, not before Bubble Tea entered the
// alternate screen (nothing is drawn then), and once.
func TestTUIAppMarksMainScreen(t *testing.T) {
	file := filepath.Join(t.TempDir(), "marks")
	t.Setenv(marks.Env, file)
	marked := func() (time.Time, bool) {
		t.Helper()
		m, err := marks.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		at, ok := m[marks.ScreenMain]
		return at, ok
	}
	term := &frameLog{text: "shell loop", file: file}
	s := NewScreen(term)
	a := NewApp(AppOptions{Title: "starting the sandbox", Screen: s,
		Main: Options{Info: Info{Backend: "envtest", Version: "v1.36.3"}, Frame: 10 * time.Millisecond}})
	a.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	a.Update(PhaseMsg{Name: "apiserver+etcd", Took: 3 * time.Second})
	a.View()
	if _, ok := marked(); ok {
		t.Fatal("marked during start-up")
	}
	a.Update(ReadyMsg{Source: fixture.NewSource(fixture.Snapshot()), Actions: &fixture.Actions{}})
	a.View() // the main screen, but Bubble Tea has not entered the alternate screen: not drawn
	if _, ok := marked(); ok || !term.wrote.IsZero() {
		t.Fatalf("marked %v, the panes written at %v: before anything was drawn", ok, term.wrote)
	}
	if _, err := s.Output().Write([]byte(ansi.SetModeAltScreenSaveCursor)); err != nil {
		t.Fatal(err)
	}
	a.View()
	at, ok := marked()
	if !ok || term.wrote.IsZero() || term.markedThen || at.Before(term.wrote) {
		t.Fatalf("mark %v (%v), panes written at %v (marked by then: %v): want the mark once the panes were written",
			at, ok, term.wrote, term.markedThen)
	}
	a.Update(keyMsg("+"))
	a.View()
	if b, err := os.ReadFile(file); err != nil || strings.Count(string(b), marks.ScreenMain) != 1 {
		t.Fatalf("marks file %q (%v): want %s once", b, err, marks.ScreenMain)
	}
}

// TestTUIAppStartupInLanguage: the App's Words reach the start-up view,
// its phases' names with them; without Words it is English.
func TestTUIAppStartupInLanguage(t *testing.T) {
	tests := []struct {
		lang string
		want []string
	}{
		{"zh", []string{"✓ 各 operator 已启动", "每种风格的 Echo hello → 2/2", "q 停止并清理"}},
		{"ru", []string{"✓ операторы запущены", "Echo hello → 2/2 во всех стилях", "q — остановить и прибрать"}},
		{"en", []string{"✓ operators started", "Echo hello → 2/2 in every style", "q stops and cleans up"}},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			a := NewApp(AppOptions{Title: "rlab", Words: lessonview.WordsFor(tt.lang)})
			a.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
			a.Update(PhaseMsg{Name: "operators started", Took: time.Second})
			out := ansi.Strip(a.view().Content)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q on the start-up view:\n%s", w, out)
				}
			}
		})
	}
}
