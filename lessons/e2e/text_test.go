package e2e

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/lessons/runner"
	"github.com/kkloud/rlab/sim/simtest"
	"github.com/kkloud/rlab/sim/state"
)

// TestTextByHand follows lesson 8's first three steps with `rlab lesson
// start 8 --text` as a student does: reads each step for longer than any
// time bound it sets, then types the command it shows in another terminal
// (bash, KUBECONFIG from the state dir, rlab's kubectl on PATH); after a
// pass it waits for Enter, and the sandbox stays up after the student
// quits the lesson until q. Step 3's bound (the standby takes over within
// 4s after SIGTERM) counts from the act, not from the reading.
func TestTextByHand(t *testing.T) {
	simtest.NeedsControlPlane(t)
	_, l, err := lessons.LoadOne(8)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	sd := state.Dir{Root: filepath.Join(root, "state", "rlab")}
	cmd := exec.CommandContext(t.Context(), rlabBin, "lesson", "start", "8", "--text", "--shell-interval", testShellInterval)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(root, "state"), "TMPDIR="+root)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 30 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			t.Log(sc.Text())
			lines <- sc.Text()
		}
	}()
	waited := false
	defer func() {
		if !waited {
			_ = stdin.Close()
			_ = cmd.Process.Signal(syscall.SIGINT)
			_ = cmd.Wait()
		}
		_ = w.Close()
	}()
	// await reads lines until one holds want; it fails on one that holds
	// a failure first.
	await := func(want string, within time.Duration) {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("rlab ended before %q", want)
				}
				if strings.Contains(line, "✗") {
					t.Fatalf("before %q: %s", want, line)
				}
				if strings.Contains(line, want) {
					return
				}
			case <-deadline:
				t.Fatalf("no %q within %s", want, within)
			}
		}
	}
	// quiet reads what rlab prints for d and fails on a pass or a failure:
	// nothing may move before the student acts.
	quiet := func(d time.Duration) {
		t.Helper()
		deadline := time.After(d)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatal("rlab ended while the student read")
				}
				if strings.Contains(line, "✓") || strings.Contains(line, "✗") {
					t.Fatalf("before the student acted: %s", line)
				}
			case <-deadline:
				return
			}
		}
	}
	typeCommand := func(step int) {
		t.Helper()
		c := exec.Command("bash", "-c", l.Steps[step].Action.Kubectl)
		c.Env = append(os.Environ(), "KUBECONFIG="+sd.Kubeconfig(), "PATH="+assetsDir+":"+os.Getenv("PATH"))
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("step %d's command: %v\n%s", step+1, err, out)
		}
	}
	for i := range 3 {
		await("── step "+strconv.Itoa(i+1)+" of 8", 4*time.Minute)
		await("waiting for:", time.Minute)
		if q := l.Steps[i].Predict; q != nil {
			_, _ = io.WriteString(stdin, "1\n") // a prediction, before the act
		}
		// The student reads for longer than step 3's 4 s bound: no check
		// passes or fails meanwhile.
		quiet(6 * time.Second)
		typeCommand(i)
		await("✓", 2*time.Minute)
		await("Enter for the next step", 10*time.Second)
		_, _ = io.WriteString(stdin, "\n")
	}
	await("── step 4 of 8", time.Minute)
	_, _ = io.WriteString(stdin, "q\n")
	await("progress kept", time.Minute)
	waited = true
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rlab lesson start 8 --text: %v", err)
	}
	prog, err := runner.LoadProgress(sd)
	if err != nil {
		t.Fatal(err)
	}
	got := prog.Of(l)
	if got.Step != 3 || len(got.How) < 3 || got.How[0] != runner.ByHand || got.How[1] != runner.ByHand || got.How[2] != runner.ByHand {
		t.Errorf("progress = %+v, want steps 1-3 by hand, next step 4", got)
	}
	// Each question answered (1) is kept with what was measured.
	for i := range 3 {
		pr, kept := got.Predictions[i]
		switch {
		case l.Steps[i].Predict == nil && kept:
			t.Errorf("step %d asks nothing, yet a prediction is kept: %+v", i+1, pr)
		case l.Steps[i].Predict != nil && (pr.Choice != 1 || pr.Measured == ""):
			t.Errorf("step %d's prediction kept as %+v, want choice 1 and what was measured", i+1, pr)
		}
	}
}
