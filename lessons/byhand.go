package lessons

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
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
	for name, target := range map[string]string{"kubectl": p.sb.Kubectl(), "rlab": self} {
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
	return append(env, "KUBECONFIG="+p.sb.Kubeconfig(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH")), nil
}

// errNoHand is a step a student cannot do from a terminal.
var errNoHand = errors.New("no command to type: only a key or autoplay does it")

// HandStep follows one step by hand: it shows it, waits h.Read if the
// step is gated (its check must not pass meanwhile), runs the step's command through bash as
// shown (namespaces localized), then waits for the check within its
// deadline, measured from the act.
func (p *Player) HandStep(ctx context.Context, s *Step, h Hand) (StepResult, error) {
	began, holders := p.Begin()
	if s.Check != nil && h.Read > 0 && s.needsAct() {
		// The student who does nothing: a step that asks for an act must
		// not pass without it, gated (waiting for the act) or not (what it
		// checks cannot hold before the act).
		rctx, cancel := context.WithTimeout(ctx, h.Read)
		o, err := p.Await(rctx, s.Check, began, time.Time{}, holders, nil)
		cancel()
		switch {
		case ctx.Err() != nil:
			return StepResult{}, ctx.Err()
		case err == nil:
			return StepResult{Took: time.Since(began)}, fmt.Errorf("passed before the student acted: %s", o.Detail)
		case !errors.Is(err, context.DeadlineExceeded):
			return StepResult{Took: time.Since(began)}, fmt.Errorf("before the student acted: %w", err)
		}
	}
	acted := time.Now()
	how, err := p.actByHand(ctx, s, h)
	if err != nil {
		return StepResult{Took: time.Since(began)}, err
	}
	if s.Check == nil {
		return StepResult{Took: time.Since(acted), Detail: how}, nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.Check.Within)
	defer cancel()
	out, err := p.Await(cctx, s.Check, began, time.Time{}, holders, nil)
	res := StepResult{Took: time.Since(acted), Detail: out.Detail}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("check not passed within %s of the act (%s): %s", s.Check.Within, how, out.Detail)
		}
		return res, err
	}
	return res, nil
}

// act does what the step asks, as a student would; it says how.
func (p *Player) actByHand(ctx context.Context, s *Step, h Hand) (string, error) {
	a := s.Action
	switch {
	case a == nil:
		return "nothing to do", nil
	case a.Kubectl != "":
		cmd := exec.CommandContext(ctx, "bash", "-c", Localize(a.Kubectl, p.sb.Prefix()))
		cmd.Env = h.Env
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
		return "typed the command", nil
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
func meantToBeRefused(a *Action) bool {
	for _, op := range a.Play {
		if op.Args.Str("expect_error") != "" || op.Name == "stale_update" {
			return true
		}
	}
	return false
}

// needsAct: the step asks the student to do something in the sandbox,
// and its check is about that act. Not a step that only shows something,
// nor one graded by rlab check's checks, which judge the student's
// operator whenever it changed (lesson 12's starter already passes some).
func (s *Step) needsAct() bool {
	a := s.Action
	if a == nil || a.Kubectl == "" && a.Key == "" && len(a.Play) == 0 {
		return false
	}
	for _, c := range s.Check.Conds {
		if c.Kind == condOperatorCheck {
			return false
		}
	}
	return true
}

// editsOperator: the step asks the student to edit their operator's file.
func editsOperator(a *Action) bool {
	for _, op := range a.Play {
		if op.Name != actRunOperator {
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
