package lessons

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kkloud/rlab/operators/style"
)

// Verb is what a student types after `rlab do` for an action only rlab can
// perform (cut a leader off, freeze the operators, slow their traffic), so
// that every step can be done by hand and a demo can be scripted. Its
// arguments are validated by the same specs as the lesson loader's.
type Verb struct {
	// Words name it: "partition"; "shell-replica", "add".
	Words []string
	// Action is the action it performs (a key of actions).
	Action string
	// Short says what it does, in one line of rlab do --help.
	Short string
	args  []verbArg
	flags []verbFlag
}

// verbArg is a positional argument of a verb: the action's argument key,
// as the usage line shows it.
type verbArg struct {
	key, usage string
	onOff      bool // typed on|off, a bool argument
}

// verbFlag is an optional --name VALUE, the action's argument key; def is
// given when the flag is not (a required argument of the action).
type verbFlag struct {
	name, key, usage, def string
}

var (
	argStyle = verbArg{key: "style", usage: "STYLE"}
	argOnOff = func(key string) verbArg { return verbArg{key: key, usage: "on|off", onOff: true} }
)

// verbs are the words of rlab do, in the order --help lists them.
var verbs = []Verb{
	{Words: []string{"partition"}, Action: "partition_leader", args: []verbArg{argStyle},
		flags: []verbFlag{{name: "mode", key: "mode", usage: "refuse|hang", def: "refuse"}},
		Short: "cut the leader off the apiserver: its requests are refused (or hang)"},
	{Words: []string{"heal"}, Action: "heal", args: []verbArg{argStyle},
		Short: "reconnect every replica to the apiserver"},
	{Words: []string{"kill-leader"}, Action: "kill_leader", args: []verbArg{argStyle},
		Short: "kill the leader (SIGKILL): the standby waits for the Lease to expire"},
	{Words: []string{"stop-leader"}, Action: "stop_leader", args: []verbArg{argStyle},
		Short: "stop the leader gracefully (SIGTERM): it releases the Lease"},
	{Words: []string{"watch-owned"}, Action: "watch_owned", args: []verbArg{argStyle, argOnOff("watch")},
		Short: "restart the replicas watching their Deployments, or not (--watch-owned=false)"},
	{Words: []string{"warmup"}, Action: "warmup", args: []verbArg{argStyle, argOnOff("on")},
		Short: "restart controller-runtime's replicas starting their watches before they lead (EnableWarmup), or not"},
	{Words: []string{"generation-predicate"}, Action: "generation_predicate", args: []verbArg{argStyle, {key: "where", usage: "off|echo|all"}},
		Short: "restart controller-runtime's replicas with GenerationChangedPredicate on no watch, the Echo watch, or every watch"},
	{Words: []string{"defaults-cache"}, Action: "defaults_cache", args: []verbArg{argStyle, {key: "cache", usage: "all|named"}},
		Short: "restart controller-runtime's replicas caching every ConfigMap of the namespace, or echo-defaults alone"},
	{Words: []string{"tune"}, Action: "tune", args: []verbArg{argStyle},
		flags: []verbFlag{{name: "workers", key: "workers", usage: "N"}, {name: "qps", key: "qps", usage: "Q"}, {name: "burst", key: "burst", usage: "B"}},
		Short: "restart the Go replicas with N workers and a client limit of Q requests/s, burst B; a flag left out: the library's default"},
	{Words: []string{"finalizer"}, Action: "finalizer", args: []verbArg{argStyle, argOnOff("on")},
		Short: "restart the replicas with or without --finalizer"},
	{Words: []string{"webhook"}, Action: "webhook", args: []verbArg{argOnOff("on")},
		Short: "create (on) or delete (off) ValidatingWebhookConfiguration " + WebhookName + ": the apiserver calls controller-runtime's webhook for Echoes in its namespace"},
	{Words: []string{"pause"}, Action: "pause_operators", args: []verbArg{argStyle},
		Short: "freeze every replica (SIGSTOP), as if the operator hung"},
	{Words: []string{"resume"}, Action: "resume_operators", args: []verbArg{argStyle},
		Short: "let every frozen replica go on (SIGCONT)"},
	{Words: []string{"slow"}, Action: "set_latency", args: []verbArg{argStyle, {key: "latency", usage: "DURATION"}},
		Short: "delay every API request of the replicas by DURATION, up to 5s (0s: full speed again)"},
	{Words: []string{"fault"}, Action: "fault", args: []verbArg{argStyle, {key: "fault", usage: "FAULT|off|off:KIND"}},
		Short: "turn a fault on at every replica's proxy (the faults are listed below), or every fault off, or one"},
	{Words: []string{"shell-replica", "add"}, Action: "add_shell_replica",
		flags: []verbFlag{{name: "suffix", key: "suffix", usage: "TEXT"}},
		Short: "start a second shell loop, shell/b, with no election; --suffix makes it append TEXT to the message"},
	{Words: []string{"shell-replica", "remove"}, Action: "remove_shell_replica",
		Short: "stop the second shell loop"},
	{Words: []string{"replicas"}, Action: ActReplicas, args: []verbArg{{key: "operator", usage: "OPERATOR"}, {key: "replicas", usage: "N"}},
		flags: []verbFlag{{name: "args", key: "args", usage: "'FLAGS'"}},
		Short: "run your operator as N replicas here, each with its own proxy; --args adds FLAGS to every one's command (--args --leader-elect)"},
	{Words: []string{"ship"}, Action: ActShip, args: []verbArg{{key: "operator", usage: "OPERATOR"}},
		flags: []verbFlag{{name: "replicas", key: "replicas", usage: "N"}},
		Short: "build your Go operator's image, load it into the kind node and run it there as a Deployment under its ServiceAccount, granted its config/rbac (kind only)"},
	{Words: []string{"unship"}, Action: ActUnship, args: []verbArg{{key: "operator", usage: "OPERATOR"}},
		Short: "bring a shipped operator back to this machine: delete its Deployment, bind the course's Role again, start its replicas here"},
}

// Verbs are the words of rlab do, in the order its help lists them.
func Verbs() []Verb { return slices.Clone(verbs) }

// Name is the verb's words: "shell-replica add".
func (v Verb) Name() string { return strings.Join(v.Words, " ") }

// Usage is how it is typed, after rlab do: "partition STYLE [--mode refuse|hang]".
func (v Verb) Usage() string {
	s := v.Name()
	for _, a := range v.args {
		s += " " + a.usage
	}
	for _, f := range v.flags {
		s += " [--" + f.name + " " + f.usage + "]"
	}
	return s
}

// Styles says which styles the verb's STYLE takes, or "" if it has none.
func (v Verb) Styles() string {
	if len(v.args) == 0 || v.args[0].key != "style" {
		return ""
	}
	if v.GoOnly() {
		return StyleNames(goStyles()) + " or " + StyleGo + " (a Go style: with a Lease and watches)"
	}
	return StyleNames(style.All()) + ", " + StyleGo + " or " + StyleAll
}

// GoOnly says whether its STYLE takes only a Go style (clientgo, runtime
// or go): the shell loop has no Lease and no watches.
func (v Verb) GoOnly() bool { return actions[v.Action].args.required["style"] == tGoStyle }

// verbNames lists the verbs for an error: "partition, heal, …".
func verbNames() string {
	var out []string
	for _, v := range verbs {
		if !slices.Contains(out, v.Words[0]) {
			out = append(out, v.Words[0])
		}
	}
	return strings.Join(out, ", ")
}

// ParseVerb reads the words typed after rlab do into the action they
// perform, validated as the lesson loader validates a play entry. Its error
// says what is wrong, what is allowed, and how the verb is typed.
func ParseVerb(words []string) (Op, error) {
	if len(words) == 0 {
		return Op{}, fmt.Errorf("say what to do: %s (rlab do --help says what each does)", verbNames())
	}
	v, err := findVerb(words)
	if err != nil {
		return Op{}, err
	}
	bad := func(format string, a ...any) (Op, error) {
		return Op{}, fmt.Errorf("%s: %s (usage: rlab do %s)", v.Name(), fmt.Sprintf(format, a...), v.Usage())
	}
	vals := map[string]string{}
	var pos []string
	rest := words[len(v.Words):]
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if !strings.HasPrefix(w, "--") {
			pos = append(pos, w)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		j := slices.IndexFunc(v.flags, func(f verbFlag) bool { return f.name == name })
		switch {
		case j < 0 && len(v.flags) == 0:
			return bad("unknown flag %s: it takes none", w)
		case j < 0:
			return bad("unknown flag %s", w)
		case !hasVal && i+1 == len(rest):
			return bad("--%s wants a value: %s", name, v.flags[j].usage)
		case !hasVal:
			i++
			val = rest[i]
		}
		if _, dup := vals[v.flags[j].key]; dup {
			return bad("--%s given twice", name)
		}
		vals[v.flags[j].key] = val
	}
	if len(pos) < len(v.args) {
		if a := v.args[len(pos)]; a.key == "style" {
			return bad("missing %s: %s", a.usage, v.Styles())
		}
		return bad("missing %s", v.args[len(pos)].usage)
	}
	if len(pos) > len(v.args) {
		return bad("unexpected %q", pos[len(v.args)])
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k, val, tag string) {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: val})
	}
	// Placeholders stand for the action's argument names in the loader's
	// messages: the student typed STYLE, not style.
	shown := map[string]string{}
	for i, a := range v.args {
		shown[a.key] = a.usage
		if !a.onOff {
			tag := "!!str"
			if t := actions[v.Action].args.required[a.key]; t == tInt {
				tag = (&yaml.Node{Kind: yaml.ScalarNode, Value: pos[i]}).ShortTag() // as a lesson's 2 reads
			}
			add(a.key, pos[i], tag)
			continue
		}
		switch pos[i] {
		case "on":
			add(a.key, "true", "!!bool")
		case "off":
			add(a.key, "false", "!!bool")
		default:
			return bad("want on or off, got %q", pos[i])
		}
	}
	for _, f := range v.flags {
		shown[f.key] = "--" + f.name
		val, ok := vals[f.key]
		if !ok {
			val = f.def
		}
		if ok || val != "" {
			tag := "!!str"
			if t := actions[v.Action].args.optional[f.key]; t == tInt || t == tQPS {
				tag = (&yaml.Node{Kind: yaml.ScalarNode, Value: val}).ShortTag() // as a lesson's 10 or 2.5 reads
			}
			add(f.key, val, tag)
		}
	}
	p := &parser{file: "rlab do"}
	args := p.args(n, v.Name(), actions[v.Action].args, false)
	if args == nil {
		var msgs []string
		for _, e := range p.errs {
			msg := e.Error()
			if pe := (*Error)(nil); errors.As(e, &pe) {
				msg = strings.TrimPrefix(pe.Msg, v.Name()+": ")
			}
			for k, u := range shown {
				if strings.HasPrefix(msg, k+": ") {
					msg = u + ": " + strings.TrimPrefix(msg, k+": ")
				}
			}
			msgs = append(msgs, msg)
		}
		return bad("%s", strings.Join(msgs, "; "))
	}
	return Op{Name: v.Action, Args: args}, nil
}

// findVerb is the verb words begin with.
func findVerb(words []string) (Verb, error) {
	var sub []string // the second words of a verb of two
	for _, v := range verbs {
		if v.Words[0] != words[0] {
			continue
		}
		if len(v.Words) == 1 {
			return v, nil
		}
		sub = append(sub, v.Words[1])
		if len(words) > 1 && words[1] == v.Words[1] {
			return v, nil
		}
	}
	switch {
	case len(sub) > 0 && len(words) == 1:
		return Verb{}, fmt.Errorf("%s: want %s after it", words[0], strings.Join(sub, " or "))
	case len(sub) > 0:
		return Verb{}, fmt.Errorf("%s: want %s, got %q", words[0], strings.Join(sub, " or "), words[1])
	}
	return Verb{}, fmt.Errorf("unknown verb %q: want one of %s (rlab do --help says what each does)", words[0], verbNames())
}

// VerbOf is the verb that performs op's action, if there is one.
func VerbOf(action string) (Verb, bool) {
	i := slices.IndexFunc(verbs, func(v Verb) bool { return v.Action == action })
	if i < 0 {
		return Verb{}, false
	}
	return verbs[i], true
}

// DoCommands are the rlab do commands a lesson's shell text holds, each as
// the words typed after "rlab do", quotes removed. A command ends at an
// unquoted ;, &, |, ) or the end of its line.
func DoCommands(text string) ([][]string, error) {
	var out [][]string
	for i := 0; i < len(text); i++ {
		if !strings.HasPrefix(text[i:], "rlab do") || i > 0 && !strings.ContainsRune(" \t\n;&|(", rune(text[i-1])) {
			continue
		}
		end := i + len("rlab do")
		if end < len(text) && text[end] != ' ' && text[end] != '\t' && text[end] != '\n' {
			continue
		}
		words, next, err := shellWords(text, end)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.TrimSpace(text[i:next]), err)
		}
		out = append(out, words)
		i = next - 1
	}
	return out, nil
}

// shellWords splits text from i into words as a shell would, with ' and "
// quotes and \ escapes, until an unquoted command separator; it returns
// where it stopped.
func shellWords(text string, i int) ([]string, int, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // within a word
		quote byte
	)
	flush := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	for ; i < len(text); i++ {
		c := text[i]
		switch {
		case quote == '\'' && c == '\'', quote == '"' && c == '"':
			quote = 0
		case quote == '"' && c == '\\' && i+1 < len(text) && strings.ContainsRune(`"\$`, rune(text[i+1])):
			i++
			cur.WriteByte(text[i])
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(text):
			i++
			cur.WriteByte(text[i])
			in = true
		case strings.IndexByte(";&|)\n", c) >= 0:
			flush()
			return words, i, nil
		case c == ' ' || c == '\t':
			flush()
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, i, fmt.Errorf("unclosed %c quote", quote)
	}
	flush()
	return words, i, nil
}
