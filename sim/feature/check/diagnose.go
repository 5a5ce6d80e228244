package check

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// A root cause is found once and named by the first check it fails: what
// went wrong, what to change, and the operator's own words for it. The
// checks after it that need the operator say "not checked: see <check>"
// instead of each waiting out its bound for the same reason.

// cause is why the operator is not doing its part.
type cause struct {
	line string // one line: what happened, what to do, its log's words
	// blocking: the operator cannot act at all (every replica is crash
	// looping, or it is denied what it needs and has never had it), so a
	// check that waits for it can no longer pass.
	blocking bool
}

// known is a root cause a framework's scaffold often has under rlab: a
// pattern of its log or of its denied requests, and what to do about it.
type known struct {
	log    *regexp.Regexp
	advice string
}

// Known causes, most specific first.
var (
	clusterScope = known{regexp.MustCompile(`at the cluster scope`),
		"it lists or watches across all namespaces, and the course's Role is in its namespace only: restrict it to $WATCH_NAMESPACE " +
			"(controller-runtime: cache.Options.DefaultNamespaces; kopf: --namespace and settings.scanning.disabled) or grade it with its own RBAC, --rbac"}
	leaderNamespace = known{regexp.MustCompile(`unable to find leader election namespace`),
		"out of a cluster it cannot find its namespace for leader election: set LeaderElectionNamespace from $POD_NAMESPACE, which rlab sets"}
	portInUse = known{regexp.MustCompile(`address already in use`),
		"its replicas share this machine, and a port: take each replica's port from $POD_NAME, or turn the listener off " +
			"(controller-runtime: --health-probe-bind-address=0, --metrics-bind-address=0)"}
	inCluster = known{regexp.MustCompile(`unable to load in-cluster configuration|KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined`),
		"it looks for a Pod's in-cluster config: load $KUBECONFIG, which rlab sets (controller-runtime's ctrl.GetConfig, client-go's clientcmd, kopf and kubectl all read it)"}
	scanning = known{regexp.MustCompile(`customresourcedefinitions|cannot list resource "namespaces"`),
		"it scans the cluster for CRDs or namespaces, which the course's Role does not allow: kopf: settings.scanning.disabled = True and --namespace; " +
			"or grade it with its own RBAC, --rbac"}
	knowns = []known{clusterScope, leaderNamespace, portInUse, inCluster, scanning}
)

// errorLine is a log line that reports a failure.
var errorLine = regexp.MustCompile(`(?i)\b(error|fatal|panic|forbidden|failed|cannot|unable|denied|refused)\b|\bE\d{4} `)

// logTail is how much of a replica's log is read: its last lines are what
// tell.
const logTail = 256 << 10

// readTail returns the last logTail bytes of path, whole lines only.
func readTail(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > logTail {
		_, _ = f.Seek(-logTail, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(string(b), "\n")
	if len(b) >= logTail && len(lines) > 0 {
		lines = lines[1:] // cut mid-line
	}
	return lines
}

// quote is a log line as a reason quotes it, in double quotes (not
// escaped: a student reads it): without klog's header and colours, on one
// line, at most quoteMax runes, keeping the part that
// matched.
func quote(line string, at int) string {
	line = ansi.ReplaceAllString(line, "")
	if m := klogHeader.FindStringIndex(line); m != nil && m[0] == 0 {
		at -= m[1]
		line = line[m[1]:]
	}
	line = strings.Join(strings.Fields(line), " ")
	if utf8.RuneCountInString(line) <= quoteMax {
		return `"` + line + `"`
	}
	// Keep the end of the line up to and past the match: errors wrap,
	// and the cause is at the end.
	r := []rune(line)
	start := max(0, len(r)-quoteMax)
	if at > 0 {
		if i := utf8.RuneCountInString(line[:min(at, len(line))]); i < start {
			start = max(0, i-quoteMax/4)
		}
	}
	end := min(len(r), start+quoteMax)
	q := string(r[start:end])
	if start > 0 {
		q = "…" + q
	}
	if end < len(r) {
		q += "…"
	}
	return `"` + q + `"`
}

const quoteMax = 220

var (
	ansi       = regexp.MustCompile("\x1b\\[[0-9;]*m")
	klogHeader = regexp.MustCompile(`^[IWEF]\d{4} [0-9:.]+\s+\d+ [^\]]+\] `)
)

// logged is what the operator's logs say: the last line of the first known
// cause found in any replica's log, else the last error line of the replica
// that failed last.
func (r *run) logged() (k *known, replica, line string) {
	tails := make([][]string, len(r.replicas)) // each log read once
	for i, rep := range r.replicas {
		tails[i] = readTail(r.sb.LogFile(r.st, rep))
	}
	for i := range knowns {
		for ri, lines := range tails {
			for j := len(lines) - 1; j >= 0; j-- {
				if m := knowns[i].log.FindStringIndex(lines[j]); m != nil {
					return &knowns[i], r.replicas[ri], quote(lines[j], m[0])
				}
			}
		}
	}
	for ri, lines := range tails {
		for j := len(lines) - 1; j >= 0; j-- {
			if errorLine.MatchString(lines[j]) {
				return nil, r.replicas[ri], quote(lines[j], 0)
			}
		}
	}
	return nil, "", ""
}

// exited words exits: "mine/a exited 2 times", a replica each, in order.
func (r *run) exited(exits map[string]int) []string {
	var out []string
	for _, rep := range r.replicas {
		if n := exits[rep]; n > 0 {
			out = append(out, fmt.Sprintf("%s exited %d time%s", r.st.Source(rep), n, plural(int32(n))))
		}
	}
	return out
}

// exits are how many times each replica failed (exited non-zero, or was
// killed by other than rlab's checks) since the run began.
func (r *run) exits() map[string]int {
	out := map[string]int{}
	for _, s := range r.sb.ReplicaStatuses() {
		if s.Style == r.st {
			if n := s.Failed - r.failed[s.Replica] - r.killed[s.Replica]; n > 0 {
				out[s.Replica] = n
			}
		}
	}
	return out
}

// deniedBy are the operator's denied requests since the run began, by key
// with its scope, and what was denied first.
func (r *run) deniedBy() (keys map[string]int, first time.Time) {
	keys = map[string]int{}
	qs, _ := r.requests(time.Time{}) // kubectl's lookups of its own namespace cost nothing
	for _, q := range qs {
		if q.Code != 403 {
			continue
		}
		if first.IsZero() {
			first = q.Time
		}
		keys[r.scopedKey(q)]++
	}
	return keys, first
}

// needed are the resources an Echo operator cannot do without.
var needed = []string{"echoes", "deployments"}

// deniedFor is how long an operator is denied what it needs, having never
// had it, before it counts as unable to act: a retry or two.
const deniedFor = 5 * time.Second

// crashLoop is how many failed exits of every replica make the operator
// down: once may be a bad start, twice is a loop.
const crashLoop = 2

// diagnose says why the operator is not doing its part, if rlab can tell,
// or nil.
func (r *run) diagnose() *cause {
	exits := r.exits()
	denied, firstDenied := r.deniedBy()
	k, rep, line := r.logged()
	if k == nil {
		// The requests tell what a quiet log does not.
		for key := range denied {
			switch {
			case strings.HasSuffix(key, "(all namespaces)"):
				k = &clusterScope
			case strings.HasSuffix(key, " customresourcedefinitions"), strings.HasSuffix(key, " namespaces"):
				k = &scanning
			}
		}
	}
	what := r.exited(exits)
	if d := counted(denied); len(d) > 0 {
		if len(d) > 3 {
			d = append(d[:3], "…")
		}
		what = append(what, "it was denied "+strings.Join(d, ", "))
	}
	if len(what) == 0 && k == nil {
		return nil
	}
	c := &cause{blocking: r.blocked(exits, firstDenied)}
	parts := []string{strings.Join(what, "; ")}
	if len(what) == 0 {
		parts = []string{"its log says why"}
	}
	if k != nil {
		parts = append(parts, k.advice)
	}
	if line != "" {
		parts = append(parts, fmt.Sprintf("%s's log: %s", r.st.Source(rep), line))
	} else if len(exits) > 0 {
		parts = append(parts, "see its log, "+r.sb.LogFile(r.st, r.replicas[0]))
	}
	c.line = strings.Join(parts, ": ")
	return c
}

// blocked says whether the operator can no longer pass a check that waits
// for it: every replica is crash looping, or it has been denied what it
// needs for deniedFor without ever having had it.
func (r *run) blocked(exits map[string]int, firstDenied time.Time) bool {
	looping := len(r.replicas) > 0
	for _, rp := range r.replicas {
		looping = looping && exits[rp] >= crashLoop
	}
	if looping {
		return true
	}
	if firstDenied.IsZero() {
		return false
	}
	had := map[string]bool{}
	denied := map[string]time.Time{} // first denial, by resource
	for _, q := range r.rec.Requests(time.Time{}) {
		res, _, _ := strings.Cut(q.Resource, "/")
		if !slices.Contains(needed, res) {
			continue
		}
		switch {
		case q.Code >= 200 && q.Code < 300:
			had[res] = true
		case q.Code == 403 && denied[res].IsZero():
			denied[res] = q.Time
		}
	}
	for res, t := range denied {
		if !had[res] && time.Since(t) >= deniedFor {
			return true
		}
	}
	return false
}
