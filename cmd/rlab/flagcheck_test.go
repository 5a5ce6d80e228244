package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadFlags runs each bad flag through the real command, in process:
// it gets one error naming the flag, the value and what would work, and
// nothing starts. The state dir's root is a plain file, so a command that
// got past its flags to the launcher fails there at once ("log dir: ..."),
// never building or starting a cluster; the good flags at the end show
// that this is where a command whose flags pass gets to.
func TestBadFlags(t *testing.T) {
	const none = "/nonexistent/rlab-flagcheck" // a kubeconfig or recording that is not there
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string // the whole error
	}{
		// rlab check: every duration, count and name.
		{"check negative within", nil, []string{"check", "--within", "-5s", "runtime"}, "--within -5s: want a positive duration, e.g. 30s"},
		{"check zero within", nil, []string{"check", "--within", "0s", "runtime"}, "--within 0s: want a positive duration, e.g. 30s"},
		{"check within below 1s", nil, []string{"check", "--within", "500ms", "runtime"}, "--within 500ms: want at least 1s, e.g. 30s"},
		{"check within no longer than the shell loop's poll", nil, []string{"check", "--within", "5s", "shell"},
			"--within 5s: want more than --shell-interval (5s): the shell loop sees a change only at its next poll"},
		{"check negative settle", nil, []string{"check", "--settle", "-1s", "runtime"}, "--settle -1s: want a positive duration, e.g. 5s"},
		{"check zero rest", nil, []string{"check", "--rest", "0s", "runtime"}, "--rest 0s: want a positive duration, e.g. 15s"},
		{"check negative shell interval", nil, []string{"check", "--shell-interval", "-1s", "shell"}, "--shell-interval -1s: want a positive duration, e.g. 5s"},
		{"check shell interval below 1s", nil, []string{"check", "--shell-interval", "500ms", "shell"},
			"--shell-interval 500ms: want whole seconds, at least 1s (rlab gives the shell loop whole seconds), e.g. 5s"},
		{"check shell interval not whole seconds", nil, []string{"check", "--shell-interval", "1500ms", "shell"},
			"--shell-interval 1.5s: want whole seconds, at least 1s (rlab gives the shell loop whole seconds), e.g. 5s"},
		{"check no replicas", nil, []string{"check", "--replicas", "0", "runtime"}, "--replicas 0: want 1 to 5"},
		{"check chaos of no fault", nil, []string{"check", "--chaos=flaky", "runtime"},
			`--chaos flaky: no fault "flaky"; want all, or some of stale, unobserved, conflict, error, latency, crash, lease, partition, disconnect`},
		{"check chaos with a bad duration", nil, []string{"check", "--chaos=stale:soon", "runtime"},
			`--chaos: fault "stale:soon": duration "soon": time: invalid duration "soon"`},
		{"check too many replicas", nil, []string{"check", "--replicas", "6", "./op.sh"}, "--replicas 6: want 1 to 5"},
		{"check bad name", nil, []string{"check", "--name", "My-Op", "./op.sh"},
			`--name: operator name "My-Op": want 1 to 20 lower-case letters and digits, starting with a letter`},
		{"check empty image", nil, []string{"check", "--image", "", "runtime"},
			`--image "": want an image, e.g. hashicorp/http-echo:0.2.3, or leave --image out for the backend's default`},
		{"check image with a space", nil, []string{"check", "--image", "http-echo :1", "runtime"},
			`--image "http-echo :1": want an image with no spaces, e.g. hashicorp/http-echo:0.2.3`},
		{"check image not a reference", nil, []string{"check", "--image", "hashicorp/HTTP-echo", "runtime"},
			`--image "hashicorp/HTTP-echo": want an image reference, [HOST[:PORT]/]NAME[:TAG][@DIGEST] with a lower-case NAME, e.g. hashicorp/http-echo:0.2.3`},
		{"check output", nil, []string{"check", "--output", "yaml", "runtime"}, `--output "yaml": want text or json`},
		{"check ship on envtest", nil, []string{"check", "--backend", "envtest", "--ship", "./echo"}, "--ship needs --backend kind (not envtest): rlab loads the image into the node of the kind cluster it makes (there is no registry) and reads that apiserver's audit log"},
		{"check ship with chaos", nil, []string{"check", "--backend", "kind", "--ship", "./echo", "--chaos"}, "--ship and --chaos exclude each other: the faults are put in rlab's proxy between each replica and the apiserver, and an operator in the cluster has none; run it on this machine for --chaos"},
		{"check role", nil, []string{"check", "--operator-role", "admin", "./op.sh"},
			`--operator-role: unknown operator role "admin": use least or namespace-admin`},
		{"check backend", nil, []string{"check", "--backend", "docker", "runtime"},
			`--backend: unknown backend "docker": use envtest, kind or kubeconfig`},
		{"check image from the environment", map[string]string{"RLAB_IMAGE": "echo server"}, []string{"check", "runtime"},
			`$RLAB_IMAGE "echo server": want an image with no spaces, e.g. hashicorp/http-echo:0.2.3`},
		// rlab run, rlab up and rlab alone.
		{"run negative for", nil, []string{"run", "--for", "-1s"}, "--for -1s: want 0 (until Ctrl-C) or a positive duration, e.g. 10m"},
		{"run zero shell interval", nil, []string{"run", "--shell-interval", "0s"}, "--shell-interval 0s: want a positive duration, e.g. 5s"},
		{"run operators", nil, []string{"run", "--operators", "shell,bash"}, `--operators: unknown style "bash" (want some of shell,clientgo,runtime, or none)`},
		{"up negative shell interval", nil, []string{"up", "--shell-interval", "-1s"}, "--shell-interval -1s: want a positive duration, e.g. 5s"},
		{"up empty image", nil, []string{"up", "--image", ""},
			`--image "": want an image, e.g. hashicorp/http-echo:0.2.3, or leave --image out for the backend's default`},
		{"up empty node image", nil, []string{"up", "--backend", "kind", "--kind-image", ""},
			`--kind-image "": want a node image, e.g. rlab.local/kind-node:v1.36.3, or leave --kind-image out for rlab's choice`},
		{"up node image with a space", nil, []string{"up", "--backend", "kind", "--kind-image", "kindest/node: v1.36.0"},
			`--kind-image "kindest/node: v1.36.0": want an image with no spaces, e.g. rlab.local/kind-node:v1.36.3`},
		{"up operator name", nil, []string{"up", "--operator", "Mine=./op.sh"},
			`--operator "Mine=./op.sh": operator name "Mine": want 1 to 20 lower-case letters and digits, starting with a letter`},
		{"rlab alone, shell interval", nil, []string{"--shell-interval", "2500ms"},
			"--shell-interval 2.5s: want whole seconds, at least 1s (rlab gives the shell loop whole seconds), e.g. 5s"},
		// rlab lesson.
		{"lesson verify negative read", nil, []string{"lesson", "verify", "1", "--read", "-1s"},
			"--read -1s: want 0 (act at once) or a positive duration, e.g. 10s"},
		{"lesson verify zero shell interval", nil, []string{"lesson", "verify", "1", "--shell-interval", "0s"},
			"--shell-interval 0s: want a positive duration, e.g. 5s"},
		{"lesson start shell interval below 1s", nil, []string{"lesson", "start", "1", "--shell-interval", "500ms"},
			"--shell-interval 500ms: want whole seconds, at least 1s (rlab gives the shell loop whole seconds), e.g. 5s"},
		{"lesson start empty image", nil, []string{"lesson", "start", "1", "--image", ""},
			`--image "": want an image, e.g. hashicorp/http-echo:0.2.3, or leave --image out for the backend's default`},
		{"lesson start operator", nil, []string{"lesson", "start", "12", "--operator", "mine"},
			`--operator "mine": want NAME=COMMAND, e.g. --operator mine=./my-operator.sh`},
		{"lesson starter negative step", nil, []string{"lesson", "starter", "12", "--step", "-1"}, "--step -1: want 0 (the starter) or a step number, e.g. 3"},
		{"lesson start unknown language", nil, []string{"lesson", "start", "1", "--lang", "de"}, `--lang "de": the course is in en, vi, zh, ru`},
		// rlab classroom: refused before the cluster is asked anything.
		{"classroom watch too narrow", nil, []string{"classroom", "watch", "--once", "--width", "10"}, "--width 10: want at least 40 columns"},
		{"classroom reset unknown lesson", nil, []string{"classroom", "reset", "--student", "s1", "--lesson", "99"}, "--lesson 99: no lesson 99 (there are 23; see rlab lesson list)"},
		// rlab bench.
		{"bench no rounds", nil, []string{"bench", "--rounds", "0"}, "--rounds 0: want at least 1"},
		{"bench negative reps", nil, []string{"bench", "--reps", "-1"}, "--reps -1: want at least 1"},
		{"bench negative echoes", nil, []string{"bench", "--echoes", "-1"}, "--echoes -1: want 0 (skip the scale run) or more"},
		{"bench Echo replicas over the CRD's maximum", nil, []string{"bench", "--replicas", "6"}, "--replicas 6: want 0 to 5"},
		{"bench zero scale timeout", nil, []string{"bench", "--scale-timeout", "0s"}, "--scale-timeout 0s: want a positive duration, e.g. 3m"},
		{"bench idle below 1s", nil, []string{"bench", "--idle", "100ms"}, "--idle 100ms: want at least 1s, e.g. 30s"},
		{"bench no operators", nil, []string{"bench", "--operators", "none"}, "--operators none: want at least one style to measure, e.g. clientgo,runtime"},
		{"bench unknown operator", nil, []string{"bench", "--operators", "clientgo,go"}, `--operators: unknown style "go" (want some of shell,clientgo,runtime, or none)`},
		{"bench negative workers", nil, []string{"bench", "--workers", "-1"}, "--workers -1: want 0 (the libraries' default, 1) or more"},
		{"bench qps without a burst", nil, []string{"bench", "--qps", "100"},
			"--qps 100: want a --burst of at least 1 with it, e.g. --burst 200: client-go's clientset refuses a rate without one"},
		{"bench zero qps", nil, []string{"bench", "--qps", "-0.5", "--burst", "10"},
			"--qps -0.5: want requests per second above 0, e.g. 50, or -1 for no client-side limit (0: the library's default)"},
		{"bench compare with nothing to compare", nil, []string{"bench", "--tune-compare"},
			"--tune-compare: want --workers, --qps or --burst to compare with the defaults, e.g. --workers 10 --qps 100 --burst 200"},
		{"bench tuning with no scale run", nil, []string{"bench", "--echoes", "0", "--workers", "10"},
			"--echoes 0: want more with --workers, --qps, --burst or --tune-compare, which are the scale run's, e.g. 500"},
		{"bench empty image", nil, []string{"bench", "--image", ""},
			`--image "": want an image, e.g. hashicorp/http-echo:0.2.3, or leave --image out for the backend's default`},
		// rlab classroom prepare: said before the kubeconfig is read.
		{"classroom no students", nil, []string{"classroom", "prepare", "--students", "0", "--kubeconfig", none}, "--students 0: want at least 1"},
		{"classroom ttl below the apiserver's 10m", nil, []string{"classroom", "prepare", "--students", "3", "--ttl", "5m", "--kubeconfig", none},
			"--ttl 5m0s: want at least 10m0s, e.g. 8h"},
		{"classroom negative ttl", nil, []string{"classroom", "prepare", "--students", "3", "--ttl", "-1h", "--kubeconfig", none},
			"--ttl -1h0m0s: want a positive duration, e.g. 8h"},
		{"classroom empty out", nil, []string{"classroom", "prepare", "--students", "3", "--out", "", "--kubeconfig", none},
			`--out "": want a directory for the kubeconfigs, e.g. classroom`},
		{"classroom server", nil, []string{"classroom", "prepare", "--students", "3", "--server", "10.0.0.1:6443", "--kubeconfig", none},
			`--server "10.0.0.1:6443": want the apiserver's URL, e.g. https://203.0.113.10:6443`},
		// rlab replay: said before the recording is opened.
		{"replay zero speed", nil, []string{"replay", "--speed", "0", none}, "--speed 0: want 1/16 (0.0625) to 64, e.g. 2"},
		{"replay speed over 64", nil, []string{"replay", "--speed", "100", none}, "--speed 100: want 1/16 (0.0625) to 64, e.g. 2"},
		// rlab operator: said before the cluster is asked anything.
		{"operator no namespace", nil, []string{"operator", "clientgo", "--kubeconfig", none},
			`--namespace "": want the namespace to watch and write, e.g. echo-clientgo`},
		{"operator namespace not a DNS label", nil, []string{"operator", "clientgo", "--kubeconfig", none, "--namespace", "Echo_1"},
			`--namespace "Echo_1": want a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"operator empty image", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--image", ""},
			`--image "": want an image, e.g. hashicorp/http-echo:0.2.3`},
		{"operator empty replica", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--replica", ""}, `--replica "": want a name, e.g. a`},
		{"operator no workers", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--workers", "0"}, "--workers 0: want at least 1"},
		{"operator unknown generation predicate", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--generation-predicate", "spec"},
			`--generation-predicate "spec": want off, echo or all`},
		{"operator generation predicate on client-go", nil, []string{"operator", "clientgo", "--kubeconfig", none, "--namespace", "x", "--generation-predicate", "echo"},
			"--generation-predicate is controller-runtime's GenerationChangedPredicate: the clientgo operator queues every event its handlers get"},
		{"operator zero qps with a burst", nil, []string{"operator", "clientgo", "--kubeconfig", none, "--namespace", "x", "--burst", "100"},
			"--burst 100: want a --qps above 0 with it, e.g. --qps 50: a burst is of a rate"},
		{"operator negative qps other than -1", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--qps", "-2"},
			"--qps -2: want requests per second above 0, e.g. 50, or -1 for no client-side limit (0: the library's default)"},
		{"operator infinite qps", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--qps", "+Inf", "--burst", "10"},
			"--qps +Inf: want requests per second above 0, e.g. 50, or -1 for no client-side limit (0: the library's default)"},
		{"operator qps without a burst", nil, []string{"operator", "clientgo", "--kubeconfig", none, "--namespace", "x", "--qps", "50"},
			"--qps 50: want a --burst of at least 1 with it, e.g. --burst 100: client-go's clientset refuses a rate without one"},
		{"operator fractional qps without a burst", nil, []string{"operator", "clientgo", "--kubeconfig", none, "--namespace", "x", "--qps", "0.1"},
			"--qps 0.1: want a --burst of at least 1 with it, e.g. --burst 1: client-go's clientset refuses a rate without one"},
		{"operator negative burst", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--qps", "50", "--burst", "-1"},
			"--burst -1: want at least 1, e.g. 100"},
		{"operator burst with no limit", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--qps", "-1", "--burst", "100"},
			"--burst 100: want a --qps above 0 with it, e.g. --qps 50: a burst is of a rate"},
		{"operator lease below 1s", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--lease-duration", "500ms"},
			"--lease-duration 500ms: want at least 1s, e.g. 4s"},
		{"operator renew deadline past the lease", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--renew-deadline", "5s"},
			"--renew-deadline 5s: want less than --lease-duration (4s)"},
		{"operator retry period within the renew deadline's jitter", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--retry-period", "3s"},
			"--retry-period 3s: want less than --renew-deadline (3s) / 1.2, e.g. 1s"},
		{"operator negative retry period", nil, []string{"operator", "runtime", "--kubeconfig", none, "--namespace", "x", "--retry-period", "-1s"},
			"--retry-period -1s: want a positive duration, e.g. 1s"},
		// rlab do reads its own words, before looking for a sandbox.
		{"do negative duration", nil, []string{"do", "slow", "go", "-5s"},
			`rlab do: slow: DURATION: want 0s to 5s, got "-5s" (usage: rlab do slow STYLE DURATION)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := flagEnv(t, tt.env)
			stdout, stderr, err := runRlab(tt.args...)
			got := ""
			if ec := exitCode(0); errors.As(err, &ec) {
				got = strings.TrimSpace(stderr) // rlab do says it itself and exits 1
			} else if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("rlab %s:\n got %q\nwant %q", strings.Join(tt.args, " "), got, tt.want)
			}
			if stdout != "" {
				t.Errorf("rlab %s wrote to stdout: %q", strings.Join(tt.args, " "), stdout)
			}
			if b, err := os.ReadFile(state); err != nil || len(b) != 0 {
				t.Errorf("the state dir's stand-in was touched: %q, %v", b, err)
			}
		})
	}

	// Good flags get as far as the launcher (or the kubeconfig, or the
	// recording): nothing above was refused for a value that works.
	for _, tt := range []struct {
		args    []string
		reached string // in the error where the command stopped
	}{
		{[]string{"check", "--within", "2s", "--settle", "1s", "--rest", "1s", "runtime"}, "log dir: "},
		{[]string{"check", "--shell-interval", "1s", "--within", "2s", "--image", "rlab.local/echo-server:v1", "shell"}, "log dir: "},
		{[]string{"check", "--replicas", "5", "--image", "localhost:5000/echo@sha256:" + strings.Repeat("a", 64), "./op.sh"}, "log dir: "},
		{[]string{"run", "--for", "0s", "--operators", "none"}, "log dir: "},
		{[]string{"up", "--backend", "kind", "--kind-image", "kindest/node:v1.36.0"}, "log dir: "},
		{nil, "log dir: "},
		{[]string{"lesson", "verify", "1", "--read", "0s", "--shell-interval", "1s"}, "log dir: "},
		{[]string{"lesson", "start", "1", "--text"}, "log dir: "},
		{[]string{"bench", "--echoes", "0", "--replicas", "5", "--idle", "1s"}, "log dir: "},
		{[]string{"bench", "--echoes", "500", "--workers", "10", "--qps", "100", "--burst", "200", "--tune-compare"}, "log dir: "},
		{[]string{"bench", "--qps", "-1", "--operators", "clientgo,runtime"}, "log dir: "},
		{[]string{"classroom", "prepare", "--students", "1", "--ttl", "10m", "--server", "https://10.0.0.1:6443", "--kubeconfig", none}, "kubeconfig: "},
		{[]string{"replay", "--speed", "0.0625", none}, "replay: open " + none},
		// The operator gets to its kubeconfig, which is not there: it logs that and exits 1.
		{[]string{"operator", "clientgo", "--kubeconfig", none, "--namespace", "x", "--qps", "50", "--burst", "100", "--workers", "10"}, "exit status 1"},
		{[]string{"operator", "clientgo", "--kubeconfig", none, "--namespace", "x", "--qps", "-1"}, "exit status 1"},
	} {
		t.Run("good/"+strings.Join(tt.args, " "), func(t *testing.T) {
			flagEnv(t, nil)
			_, _, err := runRlab(tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.reached) {
				t.Errorf("rlab %s: %v; want it to get past its flags, to %q", strings.Join(tt.args, " "), err, tt.reached)
			}
		})
	}
}

// flagEnv gives a command no environment of the user's that its flags
// read, and a state dir whose root is an empty plain file: a command that
// got to the launcher fails there. It returns that file.
func flagEnv(t *testing.T, env map[string]string) string {
	t.Helper()
	home := t.TempDir()
	for _, k := range []string{"RLAB_BACKEND", "RLAB_IMAGE", "RLAB_KIND_IMAGE", "RLAB_NAMESPACE_PREFIX", "RLAB_KWOKCTL"} {
		t.Setenv(k, env[k])
	}
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, "no-kubeconfig"))
	t.Setenv("XDG_STATE_HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	state := filepath.Join(home, "rlab")
	if err := os.WriteFile(state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return state
}

// runRlab runs rlab with args in this process.
func runRlab(args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	root := newRootCmd()
	root.SetArgs(append([]string{}, args...)) // not nil: cobra would read os.Args
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(""))
	err = root.Execute()
	return out.String(), errb.String(), err
}
