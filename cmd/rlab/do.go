package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kkloud/rlab/cmd/rlab/internal/control"
	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/fault"
)

func newDoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "do VERB [ARGS...]",
		Short: "Do what only rlab can (cut a leader off, freeze or slow the operators) in the running sandbox",
		Long:  doHelp(),
		Example: `  rlab do partition clientgo
  rlab do heal clientgo
  rlab do slow go 300ms; rlab do slow go 0s
  rlab do shell-replica add --suffix " (v2)"`,
		// The verbs have flags of their own (--mode, --suffix), and a
		// duration may start with -: lessons.ParseVerb reads them all.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && args[0] == "help" || slices.Contains(args, "-h") || slices.Contains(args, "--help") {
				return cmd.Help()
			}
			stderr := cmd.ErrOrStderr()
			fail := func(format string, a ...any) error {
				fmt.Fprintf(stderr, "rlab do: "+format+"\n", a...)
				return exitCode(1)
			}
			// Bad words are said before looking for a sandbox.
			if _, err := lessons.ParseVerb(args); err != nil {
				return fail("%v", err)
			}
			d, err := stateDir()
			if err != nil {
				return err
			}
			pid := d.Running()
			if pid == 0 {
				return fail("no sandbox runs in %s: start one with rlab up", d.Root)
			}
			done, err := control.Do(cmd.Context(), d.Control(), args)
			for _, l := range done {
				fmt.Fprintln(cmd.OutOrStdout(), l)
			}
			switch {
			case errors.Is(err, control.ErrNoServer):
				return fail("the sandbox (pid %d) takes no commands yet: it is still starting (try again once it is ready), "+
					"or it runs an older rlab, without rlab do (restart it with this one)", pid)
			case err != nil:
				return fail("%v", err)
			}
			return nil
		},
	}
}

// doHelp lists every verb with a line of what it does.
func doHelp() string {
	var b strings.Builder
	b.WriteString(`Do in the running sandbox what only rlab can: cut a leader off the apiserver,
freeze the operators, slow their traffic, restart them with other flags. Type
it in another terminal while rlab up, rlab run or a lesson runs: the lesson
steps that need it show the command, and the timeline shows each act
(rlab.act). rlab prints what it did, or exits 1 saying why not.

Verbs:
`)
	for _, v := range lessons.Verbs() {
		fmt.Fprintf(&b, "  %s\n      %s\n", v.Usage(), v.Short)
	}
	var goOnly []string
	for _, v := range lessons.Verbs() {
		if v.GoOnly() {
			goOnly = append(goOnly, v.Name())
		}
	}
	b.WriteString("\nFaults, for rlab do fault STYLE FAULT, typed KIND[:DURATION][,key=value]…:\n")
	for _, k := range fault.Kinds {
		fmt.Fprintf(&b, "  %-11s %s\n", k, k.Help())
	}
	b.WriteString("Keys: n, p, code, retry-after, verbs, resources (joined with +), seed. Every fault\n" +
		"touches only the replicas' own traffic: rlab's clients and yours never pass through it.\n")
	last := len(goOnly) - 1
	fmt.Fprintf(&b, "\nSTYLE is shell, clientgo, runtime, go (both Go styles) or all.\n%s and %s take a Go style\n"+
		"only (clientgo, runtime or go): the shell loop has no Lease and no watches.", strings.Join(goOnly[:last], ", "), goOnly[last])
	return b.String()
}
