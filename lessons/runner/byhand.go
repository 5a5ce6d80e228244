package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/actions"
	"github.com/kkloud/rlab/lessons/checks"
	"github.com/kkloud/rlab/sim/poll"
)

// Hand is a student who follows a step by hand, as the course asks: reads
// it for a while, then types the command it shows in another terminal.
type Hand struct {
	// Read is how long the student reads a step before acting. A gated
	// step's check must not pass meanwhile: that is the student who does
	// nothing, proving the step needs its act.
	Read time.Duration
	// Env is the environment of the student's terminal, after
	// eval "$(rlab env)": KUBECONFIG, and kubectl and rlab on PATH.
	Env []string
}

// HandEnv is the terminal of a student of the sandbox that rlab self
// runs: the environment, with KUBECONFIG the sandbox's, and first on PATH
// a directory bin (made here) holding only kubectl (rlab's) and rlab
// (self, whatever its file is called).
func (p *Player) HandEnv(self, bin string) ([]string, error) {
	if err := os.MkdirAll(bin, 0o700); err != nil {
		return nil, fmt.Errorf("student's bin dir: %w", err)
	}
	for name, target := range map[string]string{"kubectl": p.sb.Cluster().Kubectl(), "rlab": self} {
		link := filepath.Join(bin, name)
		_ = os.Remove(link) // left by an earlier run
		if err := os.Symlink(target, link); err != nil {
			return nil, fmt.Errorf("student's bin dir: %w", err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return append(env, "KUBECONFIG="+p.sb.Cluster().Kubeconfig(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH")), nil
}

// errNoHand is a step a student can neither type nor press a key for.
var errNoHand = errors.New("no command to type and no key to press: only autoplay does it")

// handLesson follows lesson l by hand on a Session, the model behind the
// screen's lesson panel: each step opens as the screen opens it (the first
// once the sandbox is at its baseline), is read for h.Read (a step that
// asks for an act must not pass meanwhile: the student who does nothing),
// has its question answered, and is done as a student does it: the
// command it shows typed into bash, or the key it names pressed. Its check
// is awaited from the act, and the progress must say every step was done
// by hand. It writes a line per step to out.
func (p *Player) handLesson(ctx context.Context, l *lessons.Lesson, h Hand, out io.Writer) error {
	prog := &Progress{Lessons: map[string]*LessonProgress{}}
	s := NewSession(ctx, p, []*lessons.Lesson{l}, l, 0, prog, func(*Progress) error { return nil })
	defer s.Close()
	for i := range l.Steps {
		step := &l.Steps[i]
		r, err := p.handStep(ctx, s, i, h)
		if err != nil {
			return fmt.Errorf("step %d %q: %w", i+1, step.Title, err)
		}
		fmt.Fprintf(out, "  step %d/%d %-44s ok %6s  %s\n", i+1, len(l.Steps), step.Title, checks.Secs(r.Took), r.Detail)
		s.Next()
	}
	if !s.State().Done {
		return errors.New("past the last step, the lesson is not done")
	}
	if got, want := prog.Where(l), fmt.Sprintf("%d/%d by hand", len(l.Steps), len(l.Steps)); got != want {
		return fmt.Errorf("the progress says %q, want %q", got, want)
	}
	return nil
}

// handStep does step i of s's lesson by hand, once the session shows it.
func (p *Player) handStep(ctx context.Context, s *Session, i int, h Hand) (actions.StepResult, error) {
	step := &s.l.Steps[i]
	if err := waitFor(ctx, 2*time.Minute, func() (bool, error) { return s.opened(i), nil }); err != nil {
		return actions.StepResult{}, fmt.Errorf("not shown: %w", err)
	}
	shown := time.Now()
	if step.Check != nil && h.Read > 0 && needsAct(step) {
		// The student who does nothing: nothing may pass, or fail for good.
		err := waitFor(ctx, h.Read, func() (bool, error) {
			passed, failed, detail := s.outcome()
			switch {
			case passed:
				return true, fmt.Errorf("passed before the student acted: %s", detail)
			case failed != nil:
				return true, fmt.Errorf("before the student acted: %w", failed)
			}
			return false, nil
		})
		if !errors.Is(err, context.DeadlineExceeded) {
			return actions.StepResult{Took: time.Since(shown)}, err
		}
	}
	if step.Predict != nil {
		if err := s.Predict(1); err != nil { // before the act, as asked
			return actions.StepResult{}, fmt.Errorf("predict: %w", err)
		}
	}
	acted := time.Now()
	how, err := p.actByHand(ctx, step, h, s.Key)
	if err != nil {
		return actions.StepResult{Took: time.Since(shown)}, err
	}
	if step.Check == nil {
		return actions.StepResult{Took: time.Since(acted), Detail: how}, nil
	}
	var detail string
	err = waitFor(ctx, step.Check.Within, func() (bool, error) {
		passed, failed, d := s.outcome()
		detail = d
		return passed, failed
	})
	res := actions.StepResult{Took: time.Since(acted), Detail: detail}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("check not passed within %s of the act (%s): %s", step.Check.Within, how, detail)
	}
	return res, err
}

// waitFor polls done until it says so (its error, if any, ends the wait
// too), for at most d: an error wrapping context.DeadlineExceeded then.
func waitFor(ctx context.Context, d time.Duration, done func() (bool, error)) error {
	return poll.Until(ctx, 50*time.Millisecond, d, "", func(context.Context) (bool, error) {
		ok, err := done()
		return ok, poll.Final(err)
	})
}

// actByHand does what the step asks, as a student would: types its
// command, or presses its key (key, the screen's); it says how.
func (p *Player) actByHand(ctx context.Context, s *lessons.Step, h Hand, key func() bool) (string, error) {
	a := s.Action
	switch {
	case a == nil:
		return "nothing to do", nil
	case a.Kubectl != "":
		// A step that asks for a fix to the operator and a command (lesson
		// 20's two replicas): the fix is saved first, then the command typed.
		saved := false
		for _, op := range a.Play {
			if op.Name == lessons.ActRunOperator || op.Name == lessons.ActRunProject {
				if err := p.Do(ctx, op); err != nil {
					return "", fmt.Errorf("%s: %w", op.Name, err)
				}
				saved = true
			}
		}
		cmd := exec.CommandContext(ctx, "bash", "-c", lessons.Localize(a.Kubectl, p.sb.Prefix()))
		cmd.Env = h.Env
		if a.Answer.Name != "" {
			// The student saved the note's skeleton, filled in, where they
			// type the command; the lesson's version stands in for theirs.
			dir, err := os.MkdirTemp("", "rlab-answer-")
			if err != nil {
				return "", err
			}
			defer os.RemoveAll(dir)
			data := []byte(lessons.Localize(string(a.Answer.Data), p.sb.Prefix()))
			if err := os.WriteFile(filepath.Join(dir, a.Answer.Name), data, 0o644); err != nil {
				return "", err
			}
			cmd.Dir = dir
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		refused := meantToBeRefused(a)
		if err != nil && !refused {
			return "", fmt.Errorf("the step's command failed: %w: %s", err, lastLine(out.String()))
		}
		if err == nil && refused {
			return "", fmt.Errorf("the step's command was meant to be refused, and it passed: %s", lastLine(out.String()))
		}
		switch {
		case a.Answer.Name != "":
			return "wrote " + a.Answer.Name + " from the skeleton and typed the command", nil
		case saved:
			return "saved the operator's file with the step's fix and typed the command", nil
		}
		return "typed the command", nil
	case a.Key != "" && !editsOperator(a):
		if !key() {
			return "", fmt.Errorf("key %s did nothing", a.Key)
		}
		return "pressed " + a.Key, nil
	case a.Key == "" && len(a.Play) == 0:
		// A note about what happens outside the sandbox (write a file,
		// start the lesson again with it): nothing to do in it.
		return "read the note", nil
	case editsOperator(a):
		// The student saves their operator's file with the step's fix; the
		// lesson's own version of that file stands in for their edit.
		for _, op := range a.Play {
			if err := p.Do(ctx, op); err != nil {
				return "", fmt.Errorf("%s: %w", op.Name, err)
			}
		}
		return "saved the operator's file with the step's fix", nil
	}
	return "", errNoHand
}

// meantToBeRefused: the step's command ends in a request the apiserver
// must refuse (an invalid spec, a stale write), so it exits non-zero.
func meantToBeRefused(a *lessons.Action) bool {
	for _, op := range a.Play {
		if op.Args.Str("expect_error") != "" || op.Name == "stale_update" {
			return true
		}
	}
	return false
}

// needsAct: step s asks the student to do something in the sandbox,
// and its check is about that act. Not a step that only shows something,
// nor one graded by rlab check's checks or the project's tests, which judge
// the student's operator whenever it changed (lesson 12's starter already
// passes some).
func needsAct(s *lessons.Step) bool {
	a := s.Action
	if a == nil || a.Kubectl == "" && a.Key == "" && len(a.Play) == 0 {
		return false
	}
	for _, c := range s.Check.Conds {
		if c.GradesOperator() {
			return false
		}
	}
	return true
}

// editsOperator: the step asks the student to edit their operator's file
// (or their Go project's).
func editsOperator(a *lessons.Action) bool {
	for _, op := range a.Play {
		if op.Name != lessons.ActRunOperator && op.Name != lessons.ActRunProject {
			return false
		}
	}
	return len(a.Play) > 0
}

// lastLine is the last line of a command's output that says something.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
