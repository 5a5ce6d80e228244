package main

// The documentation's commands are held to the real command tree: every
// line of a shell code block in README.md and docs/*.md that runs rlab is
// looked up in newRootCmd(), its flags parsed and its arguments validated,
// without running anything. A renamed command or flag fails here, naming
// the file and line that still shows the old one.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/kkloud/rlab/lessons"
	"github.com/kkloud/rlab/sim/feature/classroom"
)

// repoRoot is the repository's top, from cmd/rlab where the test runs.
const repoRoot = "../.."

// maxReadmeLines is how long README.md may grow: it starts the course, and
// the rest lives in docs/.
const maxReadmeLines = 220

// docPlaceholders are words a command in the docs may show that look like
// placeholders (FILE, N, HOST:PORT) but are meant. Commands in code blocks
// use concrete examples instead; tables and prose may say FILE or N.
var docPlaceholders = []string{}

// shellFences are the info strings of code blocks whose lines are commands.
// Output is fenced as ```text and is not read.
var shellFences = []string{"", "sh", "bash", "shell", "console", "zsh"}

// docFiles are README.md and every docs/*.md, relative to repoRoot.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md")
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(repoRoot, d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

func TestDocsCommands(t *testing.T) {
	for _, file := range docFiles(t) {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(repoRoot, file))
			if err != nil {
				t.Fatal(err)
			}
			cmds := docCommands(string(b))
			if len(cmds) == 0 {
				t.Fatalf("%s: no rlab command found in its shell code blocks", file)
			}
			for _, c := range cmds {
				if err := checkDocCommand(c.args); err != nil {
					t.Errorf("%s:%d: %s\n\t%s", file, c.line, err, c.text)
				}
			}
		})
	}
}

// docRunnable are the documented commands that need no sandbox and leave
// nothing behind but files in the working directory: TestDocsCommandsRun
// runs every one the docs show, as shown.
var docRunnable = [][]string{{"lesson", "list"}, {"lesson", "show"}, {"lesson", "starter"}, {"assets", "path"}, {"do", "--help"}, {"version"}}

// docNeedsAssets are the runnable commands that answer only where the
// control plane is installed: the fast tier (go test -short) leaves them out.
var docNeedsAssets = [][]string{{"assets", "path"}}

// TestDocsCommandsRun runs the documented commands that need no sandbox
// (docRunnable), in a scratch directory, and wants each to succeed.
func TestDocsCommandsRun(t *testing.T) {
	type shown struct {
		file string
		docCommand
	}
	var cmds []shown
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range docCommands(string(b)) {
			if slices.ContainsFunc(docRunnable, func(p []string) bool { return len(c.args) >= len(p) && slices.Equal(c.args[:len(p)], p) }) {
				cmds = append(cmds, shown{file, c})
			}
		}
	}
	if len(cmds) < 5 {
		t.Fatalf("only %d runnable commands found in the docs", len(cmds))
	}
	t.Chdir(t.TempDir()) // lesson starter -o writes here
	ran := 0
	for _, c := range cmds {
		if testing.Short() && slices.ContainsFunc(docNeedsAssets, func(p []string) bool { return slices.Equal(c.args[:min(len(p), len(c.args))], p) }) {
			t.Logf("%s:%d: rlab %s: needs the control plane, left to make test", c.file, c.line, strings.Join(c.args, " "))
			continue
		}
		ran++
		out, stderr, err := runRlab(c.args...)
		if err != nil {
			t.Errorf("%s:%d: rlab %s: %v\n%s", c.file, c.line, strings.Join(c.args, " "), err, stderr)
			continue
		}
		if out == "" && stderr == "" {
			t.Errorf("%s:%d: rlab %s printed nothing", c.file, c.line, strings.Join(c.args, " "))
		}
	}
	t.Logf("ran %d documented commands", ran)
}

func TestReadmeLength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move the rest into docs/", n, maxReadmeLines)
	}
}

func TestDocsLinks(t *testing.T) {
	anchors := map[string][]string{} // file (slash path from repoRoot) -> its headings' anchors, once read
	anchorsOf := func(file string) ([]string, error) {
		if a, ok := anchors[file]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			return nil, err
		}
		anchors[file] = headingAnchors(string(b))
		return anchors[file], nil
	}
	for _, file := range docFiles(t) {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(repoRoot, file))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range docLinks(string(b)) {
				target, frag, _ := strings.Cut(l.target, "#")
				dest := file
				if target != "" {
					dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), target)))
					if strings.HasPrefix(dest, "../") {
						t.Errorf("%s:%d: link %s leaves the repository", file, l.line, l.target)
						continue
					}
					if _, err := os.Stat(filepath.Join(repoRoot, dest)); err != nil {
						t.Errorf("%s:%d: link %s: no such file %s", file, l.line, l.target, dest)
						continue
					}
				}
				if frag == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				as, err := anchorsOf(dest)
				if err != nil {
					t.Errorf("%s:%d: link %s: %v", file, l.line, l.target, err)
					continue
				}
				if !slices.Contains(as, frag) {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", file, l.line, l.target, dest, frag)
				}
			}
		})
	}
}

// TestDocCommandsExtracted holds the extraction's rules to examples: which
// lines are commands, and the words each becomes.
func TestDocCommandsExtracted(t *testing.T) {
	doc := "text rlab up, not in a block\n" +
		"```sh\n" +
		"rlab up --backend kind   # a comment\n" +
		"bin/rlab check --replicas 2 -- go run ./cmd --leader-elect\n" +
		"eval \"$(bin/rlab env)\"\n" +
		"LANG=ru_RU.UTF-8 rlab lesson list\n" +
		"rlab lesson starter 12 --step 3 | diff my-operator.sh -\n" +
		"rlab lesson starter 20 -o echo-go && cd echo-go\n" +
		"rlab up --operator mine='go run ./cmd' \\\n" +
		"  --lang vi\n" +
		"make run\n" +
		"rlab bench --kwokctl \"$(bash scripts/build-kwokctl.sh)\" > out.txt\n" +
		"./linux-amd64/rlab assets unpack rlab-offline.tar.gz\n" +
		"```\n" +
		"```text\n" +
		"rlab classroom · 10:30:00 · 9 students\n" +
		"```\n"
	want := []docCommand{
		{line: 3, args: []string{"up", "--backend", "kind"}},
		{line: 4, args: []string{"check", "--replicas", "2", "--", "go", "run", "./cmd", "--leader-elect"}},
		{line: 5, args: []string{"env"}},
		{line: 6, args: []string{"lesson", "list"}},
		{line: 7, args: []string{"lesson", "starter", "12", "--step", "3"}},
		{line: 8, args: []string{"lesson", "starter", "20", "-o", "echo-go"}},
		{line: 9, args: []string{"up", "--operator", "mine=go run ./cmd", "--lang", "vi"}},
		{line: 12, args: []string{"bench", "--kwokctl", "$(bash scripts/build-kwokctl.sh)"}},
		{line: 13, args: []string{"assets", "unpack", "rlab-offline.tar.gz"}},
	}
	got := docCommands(doc)
	if len(got) != len(want) {
		t.Fatalf("got %d commands, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].line != want[i].line || !slices.Equal(got[i].args, want[i].args) {
			t.Errorf("command %d: got line %d %q, want line %d %q", i, got[i].line, got[i].args, want[i].line, want[i].args)
		}
	}
	for _, bad := range [][]string{
		{"assets", "fetch", "--from", "http://HOST:PORT"},
		{"lesson", "start", "N"},
		{"lesson", "stat", "1"},
		{"up", "--no-such-flag"},
		{"lesson", "start"},
		{"do", "partition"},
		{"assets", "frobnicate"},
	} {
		if err := checkDocCommand(bad); err == nil {
			t.Errorf("rlab %s: passed, want an error", strings.Join(bad, " "))
		}
	}
}

// A docCommand is one rlab command line of a doc: the line it starts on,
// its text and its words after rlab.
type docCommand struct {
	line int
	text string
	args []string
}

// docCommands are the rlab commands of Markdown text's shell code blocks.
//
// The rules: a block is read when its info string is empty or a shell's
// (shellFences); a line ending in \ goes on with the next; a heredoc's body
// is skipped; a line is split into commands at unquoted |, ||, &&, ; and &,
// and a # that starts a word ends it; each $(...) is a command of its own
// (eval "$(rlab env)" checks rlab env), kept as one word where it stands;
// leading VAR=value words are the environment; redirections (> FILE, 2>&1)
// are dropped; a command whose first word is rlab or ends in /rlab
// (bin/rlab, ./linux-amd64/rlab) is checked, with the words after it.
func docCommands(md string) []docCommand {
	var out []docCommand
	lines := strings.Split(md, "\n")
	inFence, read := false, false
	var fence string
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if !inFence {
			if m := fenceRE.FindStringSubmatch(trimmed); m != nil {
				inFence, fence = true, m[1]
				info, _, _ := strings.Cut(strings.TrimSpace(m[2]), " ")
				read = slices.Contains(shellFences, strings.ToLower(info))
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
			inFence = false
			continue
		}
		if !read {
			continue
		}
		start := i + 1
		text := trimmed
		for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
			i++
			text = strings.TrimSuffix(text, `\`) + " " + strings.TrimSpace(lines[i])
		}
		text = strings.TrimPrefix(text, "$ ")
		if m := heredocRE.FindStringSubmatch(text); m != nil {
			for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != m[1] {
				i++
			}
			i++ // the terminator
		}
		for _, words := range shellCommands(text) {
			if args, ok := rlabArgs(words); ok {
				out = append(out, docCommand{line: start, text: text, args: args})
			}
		}
	}
	return out
}

var (
	fenceRE   = regexp.MustCompile("^(```+|~~~+)(.*)$")
	heredocRE = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)
	envRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	redirRE   = regexp.MustCompile(`^[0-9]*(>>?|<)(&[0-9-])?`)
)

// rlabArgs: the words after rlab, if words run rlab.
func rlabArgs(words []string) ([]string, bool) {
	for len(words) > 0 && envRE.MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 || (words[0] != "rlab" && !strings.HasSuffix(words[0], "/rlab")) {
		return nil, false
	}
	return words[1:], true
}

// shellCommands splits a line of shell into its simple commands' words, as
// much of sh as docs use: quotes, backslashes, $(...) (also each a command
// of its own), comments, the list and pipe operators, redirections.
func shellCommands(line string) [][]string {
	var (
		cmds  [][]string
		words []string
		word  strings.Builder
		inw   bool // a word has begun (an empty "" is a word)
	)
	endWord := func() {
		if inw {
			words = append(words, word.String())
		}
		word.Reset()
		inw = false
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, dropRedirections(words))
		}
		words = nil
	}
	// subst reads $(...) from r[i] (the '$'), returning its text and the
	// index after its ')'.
	subst := func(r []rune, i int) (string, int) {
		depth, j := 0, i+1
		for ; j < len(r); j++ {
			switch r[j] {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					return string(r[i+2 : j]), j + 1
				}
			}
		}
		return string(r[i+2:]), len(r)
	}
	r := []rune(line)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case c == '\'':
			inw = true
			j := i + 1
			for j < len(r) && r[j] != '\'' {
				j++
			}
			word.WriteString(string(r[i+1 : min(j, len(r))]))
			i = j + 1
		case c == '"':
			inw = true
			i++
			for i < len(r) && r[i] != '"' {
				switch {
				case r[i] == '\\' && i+1 < len(r) && strings.ContainsRune(`"\$`+"`", r[i+1]):
					word.WriteRune(r[i+1])
					i += 2
				case r[i] == '$' && i+1 < len(r) && r[i+1] == '(':
					inner, next := subst(r, i)
					cmds = append(cmds, shellCommands(inner)...)
					word.WriteString(string(r[i:next]))
					i = next
				default:
					word.WriteRune(r[i])
					i++
				}
			}
			i++
		case c == '\\' && i+1 < len(r):
			inw = true
			word.WriteRune(r[i+1])
			i += 2
		case c == '$' && i+1 < len(r) && r[i+1] == '(':
			inw = true
			inner, next := subst(r, i)
			cmds = append(cmds, shellCommands(inner)...)
			word.WriteString(string(r[i:next]))
			i = next
		case c == '#' && !inw:
			endCmd()
			return cmds
		case c == '|' || c == ';' || c == '&' && !(word.Len() > 0 && strings.HasSuffix(word.String(), ">")):
			endCmd()
			for i < len(r) && strings.ContainsRune("|;&", r[i]) {
				i++
			}
		case unicode.IsSpace(c):
			endWord()
			i++
		default:
			inw = true
			word.WriteRune(c)
			i++
		}
	}
	endCmd()
	return cmds
}

// dropRedirections removes > FILE, 2>&1 and the like from a command's words.
func dropRedirections(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		m := redirRE.FindString(w)
		if m == "" {
			out = append(out, w)
			continue
		}
		if w == m && !strings.Contains(m, "&") {
			i++ // the target is the next word
		}
	}
	return out
}

// checkDocCommand checks rlab's args against a fresh command tree: the
// command exists, its flags parse, its arguments are what it takes. Nothing
// runs.
func checkDocCommand(args []string) error {
	for _, w := range args {
		if p := placeholder(w); p != "" && !slices.Contains(docPlaceholders, p) {
			return fmt.Errorf("placeholder %q in a command: show a concrete example (or add it to docPlaceholders)", p)
		}
	}
	root := newRootCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if !cmd.Runnable() {
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			return fmt.Errorf("unknown command %q for %q", rest[0], cmd.CommandPath())
		}
		return fmt.Errorf("%q needs a subcommand", cmd.CommandPath())
	}
	if cmd.DisableFlagParsing {
		// rlab do reads its own words; what it does before looking for a
		// sandbox is lessons.ParseVerb.
		if cmd.Name() != "do" {
			return fmt.Errorf("%q parses its own flags: teach this test how to check it", cmd.CommandPath())
		}
		if slices.Contains(rest, "--help") || slices.Contains(rest, "-h") || len(rest) > 0 && rest[0] == "help" {
			return nil
		}
		_, err := lessons.ParseVerb(rest)
		return err
	}
	cmd.InitDefaultHelpFlag()
	if err := cmd.ParseFlags(rest); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if help, _ := cmd.Flags().GetBool("help"); help {
		return nil
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	return nil
}

var (
	capsWordRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	capsRunRE  = regexp.MustCompile(`(^|[^$A-Za-z0-9_{])([A-Z]{2,})([^a-z]|$)`)
)

// placeholder is the part of word that stands for something to fill in
// (N, FILE, HOST:PORT, <name>, ARGS…), or "".
func placeholder(word string) string {
	if _, v, ok := strings.Cut(word, "="); ok && strings.HasPrefix(word, "-") {
		word = v
	}
	switch {
	case capsWordRE.MatchString(word):
		return word
	case strings.ContainsAny(word, "<>[]…") || strings.Contains(word, "..."):
		return word
	}
	if m := capsRunRE.FindStringSubmatch(word); m != nil {
		return m[2]
	}
	return ""
}

// A docLink is a Markdown link's target and the line it is on.
type docLink struct {
	line   int
	target string
}

var (
	linkRE     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpanRE = regexp.MustCompile("`[^`]*`")
	schemeRE   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// docLinks are the relative links of Markdown text, outside code: a link
// with a scheme (https:, mailto:) is not followed.
func docLinks(md string) []docLink {
	var out []docLink
	inFence := false
	for i, line := range strings.Split(md, "\n") {
		if fenceRE.MatchString(strings.TrimSpace(line)) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(line, ""), -1) {
			if !schemeRE.MatchString(m[1]) {
				out = append(out, docLink{line: i + 1, target: m[1]})
			}
		}
	}
	return out
}

// headingAnchors are the anchors GitHub gives Markdown text's headings:
// lower case, punctuation but - and _ dropped, spaces as -, a repeat
// numbered.
func headingAnchors(md string) []string {
	var out []string
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if fenceRE.MatchString(strings.TrimSpace(line)) {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

// TestQuotaDocumented: the quota docs/instructor.md lists is the one
// prepare computes from the course's lessons.
func TestQuotaDocumented(t *testing.T) {
	needs, err := sharedNeeds()
	if err != nil {
		t.Fatal(err)
	}
	q := classroom.QuotaFor(needs)
	cpu, mem := q.Requests()
	row := fmt.Sprintf("| `%s` | %d | %d | %d | %d | %s | %s |", classroom.QuotaName, q.Echoes, q.Deployments, q.ConfigMaps, q.Pods, cpu.String(), mem.String())
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "instructor.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), row) {
		t.Errorf("docs/instructor.md lacks the quota prepare makes:\n%s", row)
	}
}
