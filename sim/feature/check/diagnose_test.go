package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/supervisor"
)

// logTarget is a Target that has only logs and replica statuses: what
// diagnose reads besides the requests.
type logTarget struct {
	Target
	dir      string
	statuses []supervisor.Status
}

func (l logTarget) LogFile(st style.Style, replica string) string {
	return filepath.Join(l.dir, string(st)+"-"+replica+".log")
}

func (l logTarget) ReplicaStatuses() []supervisor.Status { return l.statuses }

// The operator's own words, as controller-runtime and client-go print them.
const (
	clusterScopeLog = `W1126 10:00:01.123456   4242 reflector.go:569] pkg/mod/k8s.io/client-go/tools/cache/reflector.go:251: failed to list *v1.Echo: echoes.kkloud.io is forbidden: User "system:serviceaccount:echo-mine:echo-mine-operator" cannot list resource "echoes" in API group "kkloud.io" at the cluster scope`
	leaderLog       = `2026-11-26T10:00:01Z	ERROR	setup	unable to start manager	{"error": "unable to find leader election namespace: not running in-cluster, please specify LeaderElectionNamespace"}`
	portLog         = `2026-11-26T10:00:01Z	ERROR	setup	problem running manager	{"error": "listen tcp :8081: bind: address already in use"}`
)

// TestDiagnose: the root cause is named from the operator's log and its
// denied requests, with what to do; and the operator counts as blocked only
// when it cannot act at all.
func TestDiagnose(t *testing.T) {
	const ns = "echo-mine"
	long := time.Now().Add(-time.Minute)
	status := func(rep string, failed int) supervisor.Status {
		return supervisor.Status{Name: "mine/" + rep, Style: "mine", Replica: rep, Failed: failed}
	}
	tests := []struct {
		name     string
		replicas []string
		logs     map[string]string // by replica
		failed   map[string]int
		qs       []Request
		want     []string // in the line, in order
		blocking bool
	}{
		{name: "nothing wrong", replicas: []string{"a"}, logs: map[string]string{"a": "started\n"},
			qs: []Request{{Time: long, Verb: "list", Resource: "echoes", Namespace: ns, Code: 200}}},
		{name: "exits 0 to be run again", replicas: []string{"a"}, logs: map[string]string{"a": "done\n"}},
		{name: "stock manager under a namespaced Role", replicas: []string{"a"},
			logs: map[string]string{"a": "starting\n" + clusterScopeLog + "\n"},
			qs: []Request{{Time: long, Verb: "list", Resource: "echoes", Code: 403},
				{Time: long.Add(time.Second), Verb: "list", Resource: "echoes", Code: 403}},
			want: []string{"it was denied list echoes (all namespaces) ×2", "restrict it to $WATCH_NAMESPACE", "--rbac",
				`mine/a's log: "…`, `failed to list *v1.Echo: echoes.kkloud.io is forbidden`, `at the cluster scope"`},
			blocking: true},
		{name: "denied across all namespaces, log silent", replicas: []string{"a"}, logs: map[string]string{"a": ""},
			qs:   []Request{{Time: long, Verb: "watch", Resource: "deployments", Code: 403}},
			want: []string{"watch deployments (all namespaces) ×1", "cache.Options.DefaultNamespaces"}, blocking: true},
		{name: "denied only just now", replicas: []string{"a"}, logs: map[string]string{"a": clusterScopeLog},
			qs:   []Request{{Time: time.Now(), Verb: "list", Resource: "echoes", Code: 403}},
			want: []string{"restrict it to $WATCH_NAMESPACE"}},
		{name: "denied echoes it once had", replicas: []string{"a"}, logs: map[string]string{"a": ""},
			qs: []Request{{Time: long.Add(-time.Second), Verb: "list", Resource: "echoes", Namespace: ns, Code: 200},
				{Time: long, Verb: "list", Resource: "echoes", Code: 403}},
			want: []string{"(all namespaces)"}},
		{name: "kubectl's lookup of its own namespace after a 404", replicas: []string{"a"}, logs: map[string]string{"a": ""},
			qs: []Request{{Time: long, Verb: "get", Resource: "namespaces", Object: "Namespace/" + ns, Code: 403}}},
		{name: "kopf scanning", replicas: []string{"a"}, logs: map[string]string{"a": ""},
			qs:   []Request{{Time: long, Verb: "list", Resource: "customresourcedefinitions", Code: 403}},
			want: []string{"list customresourcedefinitions ×1", "settings.scanning.disabled"}},
		{name: "leader election out of a cluster", replicas: []string{"a", "b"},
			logs:   map[string]string{"a": leaderLog + "\n", "b": leaderLog + "\n"},
			failed: map[string]int{"a": 3, "b": 2},
			want: []string{"mine/a exited 3 times; mine/b exited 2 times", "LeaderElectionNamespace from $POD_NAMESPACE",
				`mine/a's log: "2026-11-26T10:00:01Z ERROR setup unable to start manager {"error": "unable to find leader election namespace`},
			blocking: true},
		{name: "the second replica's probe port", replicas: []string{"a", "b"},
			logs:   map[string]string{"a": "leader elected\n", "b": "starting\n" + portLog + "\n"},
			failed: map[string]int{"b": 4},
			want:   []string{"mine/b exited 4 times", "take each replica's port from $POD_NAME", `mine/b's log: "`, `address already in use"}"`}},
		{name: "an unknown crash", replicas: []string{"a"},
			logs:   map[string]string{"a": "panic: runtime error: invalid memory address\ngoroutine 1 [running]:\n"},
			failed: map[string]int{"a": 2},
			want:   []string{"mine/a exited 2 times", `mine/a's log: "panic: runtime error: invalid memory address"`}, blocking: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tg := logTarget{dir: dir}
			for _, rep := range tt.replicas {
				if err := os.WriteFile(tg.LogFile("mine", rep), []byte(tt.logs[rep]), 0o600); err != nil {
					t.Fatal(err)
				}
				tg.statuses = append(tg.statuses, status(rep, tt.failed[rep]))
			}
			rec := logOf(t, tt.qs)
			r := &run{sb: tg, st: "mine", ns: ns, rec: rec, replicas: tt.replicas,
				failed: map[string]int{}, killed: map[string]int{},
				scopes: knownScopes()}
			c := r.diagnose()
			if len(tt.want) == 0 {
				if c != nil {
					t.Fatalf("diagnose() = %q, want nothing", c.line)
				}
				return
			}
			if c == nil {
				t.Fatalf("diagnose() = nil, want %q", tt.want)
			}
			rest := c.line
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("line %q\nlacks (in order) %q", c.line, w)
				}
				rest = rest[i+len(w):]
			}
			if c.blocking != tt.blocking {
				t.Fatalf("blocking = %v, want %v (line %q)", c.blocking, tt.blocking, c.line)
			}
		})
	}
}

// TestQuote: a long line keeps the part that matched and its end.
func TestQuote(t *testing.T) {
	long := strings.Repeat("x", 400) + " cannot list resource at the cluster scope " + strings.Repeat("y", 20)
	q := quote(long, 400)
	if !strings.HasPrefix(q, `"…`) || !strings.Contains(q, "cannot list resource at the cluster scope") || !strings.HasSuffix(q, `yyy"`) {
		t.Fatalf("quote = %s", q)
	}
	if got := quote("\x1b[31mE1126 10:00:01.1   42 main.go:1] boom\x1b[0m", 0); got != `"boom"` {
		t.Fatalf("quote = %s, want the message without klog's header and colours", got)
	}
}

// TestIdle: a watching operator that made no request for idleAfter after
// the check's change is not going to act; a polling one is given the whole
// bound, and so is one that did act.
func TestIdle(t *testing.T) {
	changed := time.Now().Add(-idleAfter - time.Second)
	watch := Request{Time: changed.Add(-time.Minute), Verb: "watch", Resource: "deployments", Code: 200}
	poll := Request{Time: changed.Add(-time.Minute), Verb: "list", Resource: "echoes", Code: 200}
	lease := Request{Time: changed.Add(time.Second), Verb: "update", Resource: "leases", Code: 200}
	acted := Request{Time: changed.Add(time.Second), Verb: "patch", Resource: "deployments", Code: 200}
	rewatch := Request{Time: changed.Add(time.Second), Verb: "watch", Resource: "deployments", Code: 200}
	tests := []struct {
		name    string
		changed time.Time
		qs      []Request
		idle    bool
	}{
		{"watching, silent since", changed, []Request{watch, rewatch}, true},
		{"watching, waiting for a Lease", changed, []Request{watch, lease}, false},
		{"watching, acted", changed, []Request{watch, acted}, false},
		{"polling", changed, []Request{poll, lease}, false},
		{"watching, too early to tell", time.Now(), []Request{watch}, false},
		{"no change to act on", time.Time{}, []Request{watch}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := logOf(t, tt.qs)
			r := &run{rec: rec, changed: tt.changed}
			if got := r.idle(); got != tt.idle {
				t.Fatalf("idle() = %v, want %v", got, tt.idle)
			}
		})
	}
}
