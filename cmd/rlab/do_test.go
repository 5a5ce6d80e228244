package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/state"
)

// TestDoCommand: rlab do's help lists every verb; bad words, no sandbox,
// and a sandbox that takes no commands each get one clear error and exit 1,
// without a sandbox to talk to.
func TestDoCommand(t *testing.T) {
	home, err := os.MkdirTemp("/tmp", "rlab-do-") // short: the socket's path must fit sun_path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("XDG_STATE_HOME", home)
	d := state.Dir{Root: filepath.Join(home, "rlab")}

	do := func(args ...string) (stdout, stderr string, err error) {
		var out, errb bytes.Buffer
		root := newRootCmd()
		root.SetArgs(append([]string{"do"}, args...))
		root.SetOut(&out)
		root.SetErr(&errb)
		err = root.Execute()
		return out.String(), errb.String(), err
	}

	out, _, err := do("--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range lessons.Verbs() {
		if !strings.Contains(out, "\n  "+v.Usage()+"\n      "+v.Short+"\n") {
			t.Errorf("rlab do --help does not list %q with its line:\n%s", v.Usage(), out)
		}
	}

	tests := []struct {
		name    string
		running bool // the state dir is held, with no socket
		args    []string
		want    string
	}{
		{"bad words", false, []string{"partition", "shell"}, `rlab do: partition: STYLE: want a Go style, with a Lease and watches: clientgo, runtime or go, got "shell" (usage: rlab do partition STYLE [--mode refuse|hang])`},
		{"bad words, sandbox or not", true, []string{"slow", "go"}, "rlab do: slow: missing DURATION (usage: rlab do slow STYLE DURATION)"},
		{"no sandbox", false, []string{"heal", "go"}, "rlab do: no sandbox runs in " + d.Root + ": start one with rlab up"},
		{"no socket", true, []string{"heal", "go"}, fmt.Sprintf("rlab do: the sandbox (pid %d) takes no commands yet: it is still starting "+
			"(try again once it is ready), or it runs an older rlab, without rlab do (restart it with this one)", os.Getpid())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.running {
				lock, err := d.Acquire()
				if err != nil {
					t.Fatal(err)
				}
				defer lock.Release()
			}
			out, stderr, err := do(tt.args...)
			var ec exitCode
			if !errors.As(err, &ec) || ec != 1 || out != "" || stderr != tt.want+"\n" {
				t.Errorf("err %v, stdout %q, stderr %q; want exit 1 and\n%s", err, out, stderr, tt.want)
			}
		})
	}
}
