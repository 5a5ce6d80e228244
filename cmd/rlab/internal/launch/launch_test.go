package launch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/sim/assets"
	"github.com/kkloud/rlab/sim/backend"
	"github.com/kkloud/rlab/sim/cluster"
	"github.com/kkloud/rlab/sim/state"
	"github.com/kkloud/rlab/tui"
)

// stateHome points the state dir at a directory of the test's own.
func stateHome(t *testing.T) state.Dir {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", home)
	return state.Dir{Root: filepath.Join(home, "rlab")}
}

// A second rlab is refused before it touches anything: New says who holds
// the state dir, as the message the student reads.
func TestNewRefusesABusyStateDir(t *testing.T) {
	d := stateHome(t)
	lock, err := d.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, err = New()
	var busy *state.BusyError
	if !errors.As(err, &busy) || busy.PID != os.Getpid() || busy.Root != d.Root {
		t.Fatalf("New with the state dir held: %v, want a BusyError naming pid %d and %s", err, os.Getpid(), d.Root)
	}
}

// A Launcher that never started stops and closes cleanly, more than once,
// and leaves rlab's log in the state dir.
func TestCloseWithoutStart(t *testing.T) {
	d := stateHome(t)
	l, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if l.Dir != d {
		t.Fatalf("Dir = %v, want %v", l.Dir, d)
	}
	if err := l.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for range 2 {
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(d.Logs(), "rlab.log")); err != nil {
		t.Fatalf("no rlab.log: %v", err)
	}
	if l.Source() != nil || l.Session() != nil {
		t.Fatalf("Source %v, Session %v before Start", l.Source(), l.Session())
	}
}

func TestPrint(t *testing.T) {
	var b bytes.Buffer
	r := Print(&b)
	r.Starting(state.Dir{Root: "/s/rlab"}, backend.Backend{})
	r.Note("cleaned up etcd (pid 7) left by a previous run")
	want := "starting sandbox (envtest " + assets.KubeVersion + ", state in /s/rlab)\n" +
		"cleaned up etcd (pid 7) left by a previous run\n"
	if b.String() != want || r.Build != &b || r.Phase != nil {
		t.Fatalf("Print wrote %q, want %q (Build %v, Phase set %v)", b.String(), want, r.Build, r.Phase != nil)
	}
}

// Show turns the same reports into the screen's start-up messages, a
// build's output line by line.
func TestShow(t *testing.T) {
	var got []tea.Msg
	r := Show(func(m tea.Msg) { got = append(got, m) })
	fmt.Fprint(r.Build, "building etcd\nbuilding kwok")
	r.Build.(interface{ Flush() error }).Flush()
	r.Phase(cluster.Phase{Name: "etcd ready", Took: time.Second})
	r.Note("cleaned up etcd (pid 7) left by a previous run")
	want := []tea.Msg{tui.BuildLineMsg("building etcd"), tui.BuildLineMsg("building kwok"),
		tui.PhaseMsg{Name: "etcd ready", Took: time.Second}, tui.NoteMsg("cleaned up etcd (pid 7) left by a previous run")}
	if !reflect.DeepEqual(got, want) || r.Starting != nil {
		t.Fatalf("Show sent %#v, want %#v (Starting set %v)", got, want, r.Starting != nil)
	}
}

func TestStartError(t *testing.T) {
	cause := errors.New("etcd: exit status 1")
	err := error(&StartError{Err: cause, Logs: "/s/rlab/logs"})
	if got, want := err.Error(), "start sandbox: etcd: exit status 1 (logs in /s/rlab/logs)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, cause) {
		t.Fatal("StartError does not unwrap to its cause")
	}
}

func TestLineWriter(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   []string
	}{
		{"whole lines", []string{"a\nb\n"}, []string{"a", "b"}},
		{"a line over two writes", []string{"buil", "ding\n"}, []string{"building"}},
		{"carriage returns redraw", []string{"10%\r20%\r", "done\n"}, []string{"10%", "20%", "done"}},
		{"empty lines are skipped", []string{"\n\na\r\n"}, []string{"a"}},
		{"flush sends the unfinished line", []string{"a\nno newline"}, []string{"a", "no newline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			w := &lineWriter{send: func(s string) { got = append(got, s) }}
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			_ = w.Flush()
			_ = w.Flush() // nothing twice
			if !slices.Equal(got, tt.want) {
				t.Fatalf("sent %q, want %q", got, tt.want)
			}
		})
	}
}

// Resume starts a lesson where the student got to, unless told to start
// over; a finished lesson starts over too.
func TestResume(t *testing.T) {
	all, err := lessons.Load()
	if err != nil {
		t.Fatal(err)
	}
	l := all[0]
	if len(l.Steps) < 2 {
		t.Fatalf("lesson %d has %d steps; the test wants two", l.Number, len(l.Steps))
	}
	tests := []struct {
		name      string
		reached   int // -1: no progress saved
		fromStart bool
		want      int
	}{
		{"no progress", -1, false, 0},
		{"at step 2", 1, false, 1},
		{"at step 2, from the start", 1, true, 0},
		{"done: starts over", len(l.Steps), false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := state.Dir{Root: t.TempDir()}
			if tt.reached >= 0 {
				p := &runner.Progress{Lessons: map[string]*runner.LessonProgress{}}
				p.Set(l, tt.reached, time.Now())
				if err := p.Save(d); err != nil {
					t.Fatal(err)
				}
			}
			prog, from, err := Resume(d, l, tt.fromStart)
			if err != nil || prog == nil {
				t.Fatalf("Resume: %v, %v", prog, err)
			}
			if from != tt.want {
				t.Fatalf("Resume = step %d, want %d", from, tt.want)
			}
		})
	}
}
