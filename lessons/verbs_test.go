package lessons

import (
	"reflect"
	"strings"
	"testing"
)

// Every verb reads into the op a lesson would play; bad input says what is
// wrong, what is allowed and how the verb is typed.
func TestParseVerb(t *testing.T) {
	tests := []struct {
		words string
		want  Op
	}{
		{"partition clientgo", Op{Name: "partition_leader", Args: Args{"style": "clientgo", "mode": "refuse"}}},
		{"partition go --mode hang", Op{Name: "partition_leader", Args: Args{"style": "go", "mode": "hang"}}},
		{"partition --mode=refuse runtime", Op{Name: "partition_leader", Args: Args{"style": "runtime", "mode": "refuse"}}},
		{"heal go", Op{Name: "heal", Args: Args{"style": "go"}}},
		{"kill-leader runtime", Op{Name: "kill_leader", Args: Args{"style": "runtime"}}},
		{"stop-leader clientgo", Op{Name: "stop_leader", Args: Args{"style": "clientgo"}}},
		{"watch-owned go off", Op{Name: "watch_owned", Args: Args{"style": "go", "watch": false}}},
		{"watch-owned clientgo on", Op{Name: "watch_owned", Args: Args{"style": "clientgo", "watch": true}}},
		{"finalizer all on", Op{Name: "finalizer", Args: Args{"style": "all", "on": true}}},
		{"finalizer shell off", Op{Name: "finalizer", Args: Args{"style": "shell", "on": false}}},
		{"pause all", Op{Name: "pause_operators", Args: Args{"style": "all"}}},
		{"resume shell", Op{Name: "resume_operators", Args: Args{"style": "shell"}}},
		{"slow go 300ms", Op{Name: "set_latency", Args: Args{"style": "go", "latency": "300ms"}}},
		{"slow all 0s", Op{Name: "set_latency", Args: Args{"style": "all", "latency": "0s"}}},
		{"tune go", Op{Name: "tune", Args: Args{"style": "go"}}},
		{"tune clientgo --workers 10 --qps 100 --burst 200", Op{Name: "tune", Args: Args{"style": "clientgo", "workers": 10, "qps": float32(100), "burst": 200}}},
		{"tune runtime --qps=2.5 --burst=5", Op{Name: "tune", Args: Args{"style": "runtime", "qps": float32(2.5), "burst": 5}}},
		{"tune runtime --qps -1", Op{Name: "tune", Args: Args{"style": "runtime", "qps": float32(-1)}}},
		{"tune go --workers 0", Op{Name: "tune", Args: Args{"style": "go", "workers": 0}}},
		{"fault go stale:2s", Op{Name: "fault", Args: Args{"style": "go", "fault": "stale:2s"}}},
		{"fault all conflict,p=0.3,resources=echoes/status", Op{Name: "fault", Args: Args{"style": "all", "fault": "conflict,p=0.3,resources=echoes/status"}}},
		{"fault shell off", Op{Name: "fault", Args: Args{"style": "shell", "fault": "off"}}},
		{"fault runtime off:crash", Op{Name: "fault", Args: Args{"style": "runtime", "fault": "off:crash"}}},
		{"shell-replica add", Op{Name: "add_shell_replica", Args: Args{}}},
		{"shell-replica add --suffix| (v2)", Op{Name: "add_shell_replica", Args: Args{"suffix": " (v2)"}}},
		{"shell-replica remove", Op{Name: "remove_shell_replica", Args: Args{}}},
	}
	for _, tt := range tests {
		t.Run(tt.words, func(t *testing.T) {
			got, err := ParseVerb(split(tt.words))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}

	bad := []struct{ words, want string }{
		{"", "say what to do: partition, heal, kill-leader, stop-leader, watch-owned, warmup, generation-predicate, defaults-cache, tune, finalizer, webhook, pause, resume, slow, fault, shell-replica, replicas, ship, unship (rlab do --help says what each does)"},
		{"partiton go", `unknown verb "partiton": want one of partition, heal,`},
		{"partition", "partition: missing STYLE: clientgo, runtime or go (a Go style: with a Lease and watches) (usage: rlab do partition STYLE [--mode refuse|hang])"},
		{"pause", "pause: missing STYLE: shell, clientgo, runtime, go or all (usage: rlab do pause STYLE)"},
		{"partition shell", `partition: STYLE: want a Go style, with a Lease and watches: clientgo, runtime or go, got "shell" (usage: rlab do partition STYLE [--mode refuse|hang])`},
		{"partition all", `partition: STYLE: want a Go style, with a Lease and watches: clientgo, runtime or go, got "all"`},
		{"partition go --mode drop", `partition: --mode: want refuse or hang, got "drop"`},
		{"partition go --mode", "partition: --mode wants a value: refuse|hang"},
		{"partition go --mode hang --mode refuse", "partition: --mode given twice"},
		{"partition go --force", "partition: unknown flag --force (usage"},
		{"partition go now", `partition: unexpected "now" (usage: rlab do partition STYLE [--mode refuse|hang])`},
		{"heal go --mode refuse", "heal: unknown flag --mode: it takes none (usage: rlab do heal STYLE)"},
		{"pause python", `pause: STYLE: want a style: shell, clientgo, runtime, go or all, got "python" (usage: rlab do pause STYLE)`},
		{"watch-owned go", "watch-owned: missing on|off (usage: rlab do watch-owned STYLE on|off)"},
		{"watch-owned go yes", `watch-owned: want on or off, got "yes" (usage: rlab do watch-owned STYLE on|off)`},
		{"watch-owned shell off", `watch-owned: STYLE: want a Go style`},
		{"finalizer all true", `finalizer: want on or off, got "true"`},
		{"slow go", "slow: missing DURATION (usage: rlab do slow STYLE DURATION)"},
		{"slow go 10s", `slow: DURATION: want 0s to 5s, got "10s" (usage: rlab do slow STYLE DURATION)`},
		{"slow go -1s", `slow: DURATION: want 0s to 5s, got "-1s"`},
		{"slow go fast", `slow: DURATION: want 0s to 5s, got "fast"`},
		{"tune", "tune: missing STYLE: clientgo, runtime or go (a Go style: with a Lease and watches) (usage: rlab do tune STYLE [--workers N] [--qps Q] [--burst B])"},
		{"tune shell --workers 2", `tune: STYLE: want a Go style, with a Lease and watches: clientgo, runtime or go, got "shell"`},
		{"tune go --workers many", `tune: --workers: want a whole number from 0 to 1000, got "many" (usage: rlab do tune STYLE [--workers N] [--qps Q] [--burst B])`},
		{"tune go --workers -1", `tune: --workers: want a whole number from 0 to 1000, got "-1"`},
		{"tune go --qps fast --burst 10", `tune: --qps: want requests per second above 0, e.g. 50, or -1 for no client-side limit, got "fast"`},
		{"tune go --qps 0 --burst 10", `tune: --qps: want requests per second above 0, e.g. 50, or -1 for no client-side limit, got "0"`},
		{"tune go --qps 50", "tune: --qps 50: want a --burst of at least 1 with it, e.g. --burst 100: client-go's clientset refuses a rate without one (usage: rlab do tune STYLE [--workers N] [--qps Q] [--burst B])"},
		{"tune go --burst 100", "tune: --burst 100: want a --qps above 0 with it, e.g. --qps 50: a burst is of a rate"},
		{"tune go --qps -1 --burst 100", "tune: --burst 100: want a --qps above 0 with it"},
		{"fault go", "fault: missing FAULT|off|off:KIND (usage: rlab do fault STYLE FAULT|off|off:KIND)"},
		{"fault go flaky", `fault: FAULT|off|off:KIND: fault "flaky": no fault "flaky"; want one of stale, unobserved, conflict, error, latency, crash, lease, partition, disconnect`},
		{"fault go latency", `fault "latency": latency needs a duration: latency:2s`},
		{"fault go off:flaky", `off:flaky: no fault "flaky"`},
		{"shell-replica", "shell-replica: want add or remove after it"},
		{"shell-replica start", `shell-replica: want add or remove, got "start"`},
		{"shell-replica add --suffix| ", `shell-replica add: --suffix: want text, got " " (usage: rlab do shell-replica add [--suffix TEXT])`},
		{"shell-replica remove now", `shell-replica remove: unexpected "now"`},
	}
	for _, tt := range bad {
		t.Run("bad "+tt.words, func(t *testing.T) {
			_, err := ParseVerb(split(tt.words))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// split is words separated by spaces; a | starts one last word that keeps
// its spaces.
func split(s string) []string {
	if s == "" {
		return nil
	}
	head, tail, ok := strings.Cut(s, "|")
	words := strings.Fields(head)
	if ok {
		words = append(words, tail)
	}
	return words
}

// Every verb performs an action that exists, is listed with a line of
// help, and its STYLE says which styles it takes.
func TestVerbsWhole(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Verbs() {
		if _, ok := actions[v.Action]; !ok {
			t.Errorf("%s: no action %s", v.Name(), v.Action)
		}
		if seen[v.Name()] {
			t.Errorf("%s: listed twice", v.Name())
		}
		seen[v.Name()] = true
		if len(v.Short) < 15 || strings.Contains(v.Short, "\n") {
			t.Errorf("%s: want one line of help, got %q", v.Name(), v.Short)
		}
		if _, styled := actions[v.Action].args.required["style"]; styled != (v.Styles() != "") {
			t.Errorf("%s: STYLE %q, but the action takes a style: %v", v.Name(), v.Styles(), styled)
		}
	}
}

func TestDoCommands(t *testing.T) {
	tests := []struct {
		text string
		want [][]string
	}{
		{"rlab do slow go 300ms", [][]string{{"slow", "go", "300ms"}}},
		{"rlab do slow go 0s; for s in shell; do kubectl -n echo-$s get ec; done", [][]string{{"slow", "go", "0s"}}},
		{"rlab do pause all && kubectl -n echo-shell get ec", [][]string{{"pause", "all"}}},
		{`rlab do shell-replica add --suffix " (v2)"`, [][]string{{"shell-replica", "add", "--suffix", " (v2)"}}},
		{`rlab do shell-replica add --suffix=' (v2)' | cat`, [][]string{{"shell-replica", "add", "--suffix= (v2)"}}},
		{"rlab do heal go\nrlab do partition clientgo --mode hang\n", [][]string{{"heal", "go"}, {"partition", "clientgo", "--mode", "hang"}}},
		{"(rlab do heal go)", [][]string{{"heal", "go"}}},
		{"kubectl -n echo-shell get ec", nil},
		{"myrlab do heal go; rlab doctor", nil},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := DoCommands(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := DoCommands(`rlab do shell-replica add --suffix " (v2)`); err == nil || !strings.Contains(err.Error(), `unclosed " quote`) {
		t.Errorf("unclosed quote: error %v", err)
	}
}

// The loader takes a step's command that uses rlab do, and holds it to
// what the step plays.
func TestParseDoCommands(t *testing.T) {
	step := func(cmd, play string) string {
		return "  - title: a\n    text: b\n    action:\n      kubectl: " + cmd + "\n      play:\n" + play
	}
	const slow = "        - set_latency: {style: go, latency: 300ms}\n"
	tests := []struct {
		name, yaml string
		err        string // "" if it loads
	}{
		{"rlab do alone", step("rlab do slow go 300ms", slow), ""},
		{"rlab do then kubectl", step(`'rlab do slow go 300ms; kubectl -n echo-shell get ec'`, slow), ""},
		{"no play entry of it", step("rlab do slow go 200ms", slow),
			"l.yaml:7: step 1: action: kubectl: rlab do slow go 200ms (both Go styles: delay every API request by 200ms) is not what play does"},
		{"another style", step("rlab do slow all 300ms", slow), "is not what play does"},
		{"mistyped", step("rlab do slow go", slow), "l.yaml:7: step 1: action: kubectl: rlab do slow go: slow: missing DURATION"},
		{"neither kubectl nor rlab do", step("kill -9 1", slow), "the command to type must use kubectl or rlab do"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("l.yaml", []byte(lesson(tt.yaml)))
			switch {
			case tt.err == "" && err != nil:
				t.Fatal(err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want %q", err, tt.err)
			}
		})
	}
}
