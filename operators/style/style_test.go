package style

import (
	"reflect"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	tests := []struct {
		s                            Style
		ns, managedBy, operator, src string
	}{
		{Shell, "echo-shell", "echo-shell", "echo-shell-operator", "shell/a"},
		{ClientGo, "echo-clientgo", "echo-clientgo", "echo-clientgo-operator", "clientgo/a"},
		{Runtime, "echo-runtime", "echo-runtime", "echo-runtime-operator", "runtime/a"},
	}
	for _, tt := range tests {
		t.Run(string(tt.s), func(t *testing.T) {
			if got := tt.s.Namespace(); got != tt.ns {
				t.Errorf("Namespace = %q, want %q", got, tt.ns)
			}
			if got := tt.s.ManagedBy(); got != tt.managedBy {
				t.Errorf("ManagedBy = %q, want %q", got, tt.managedBy)
			}
			if got := tt.s.Operator(); got != tt.operator {
				t.Errorf("Operator = %q, want %q", got, tt.operator)
			}
			if got := tt.s.Source("a"); got != tt.src {
				t.Errorf("Source = %q, want %q", got, tt.src)
			}
			if got := FromNamespace(tt.ns); got != tt.s {
				t.Errorf("FromNamespace(%q) = %q", tt.ns, got)
			}
			if got, err := Parse(string(tt.s)); err != nil || got != tt.s {
				t.Errorf("Parse = %q, %v", got, err)
			}
		})
	}
	if _, err := Parse("python"); err == nil {
		t.Error("Parse(python) did not fail")
	}
}

func TestTraits(t *testing.T) {
	goStages := []string{"watch", "informer", "queue", "reconcile", "API"}
	tests := []struct {
		s    Style
		want Traits
	}{
		{Shell, Traits{Title: "shell loop", Builtin: true, Polls: true, Traces: true,
			Stages: []string{"poll", "get", "apply", "patch"}, Colour: Colour{"#9A5B00", "#F2B84B"}}},
		{ClientGo, Traits{Title: "client-go", Builtin: true, Traces: true, ElectsLeader: true,
			Stages: goStages, Colour: Colour{"#005F87", "#5FD7FF"}, Options: []Option{Tuning}}},
		{Runtime, Traits{Title: "controller-runtime", Builtin: true, Traces: true, ElectsLeader: true,
			Stages: goStages, Colour: Colour{"#8700AF", "#D787FF"},
			Options: []Option{Tuning, Warmup, GenerationPredicate, DefaultsCache, Webhook}}},
		// A student's own: nothing assumed, its name as title, OwnColour.
		{"mine", Traits{Title: "mine", Colour: OwnColour}},
	}
	for _, tt := range tests {
		t.Run(string(tt.s), func(t *testing.T) {
			if got := tt.s.Traits(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Traits =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
	// Takes reads Options: a student's own operator takes none of rlab's.
	for _, tt := range []struct {
		s    Style
		o    Option
		want bool
	}{{Runtime, Webhook, true}, {ClientGo, Tuning, true}, {ClientGo, Warmup, false}, {Shell, Tuning, false}, {"mine", Tuning, false}} {
		if got := tt.s.Traits().Takes(tt.o); got != tt.want {
			t.Errorf("%s takes %s = %v, want %v", tt.s, tt.o, got, tt.want)
		}
	}
	// Every built-in is in the table, and only they are built in.
	for _, s := range All() {
		if !s.Traits().Builtin {
			t.Errorf("%s: not Builtin", s)
		}
	}
}

func TestIdentityRoundTrip(t *testing.T) {
	tests := []struct {
		id      string
		s       Style
		replica string
		pid     int
		ok      bool
	}{
		{"clientgo-a-4121", ClientGo, "a", 4121, true},
		{"runtime-b-7", Runtime, "b", 7, true},
		{"my-op-x-12", "my-op", "x", 12, true},
		{"clientgo-a", "", "", 0, false},
		{"clientgo--12", "", "", 0, false},
		{"-a-12", "", "", 0, false},
		{"", "", "", 0, false},
	}
	for _, tt := range tests {
		s, replica, pid, ok := ParseIdentity(tt.id)
		if s != tt.s || replica != tt.replica || pid != tt.pid || ok != tt.ok {
			t.Errorf("ParseIdentity(%q) = %q %q %d %v, want %q %q %d %v", tt.id, s, replica, pid, ok, tt.s, tt.replica, tt.pid, tt.ok)
		}
		if tt.ok {
			if got := tt.s.Identity(tt.replica, tt.pid); got != tt.id {
				t.Errorf("Identity = %q, want %q", got, tt.id)
			}
		}
	}
}

func TestFromSource(t *testing.T) {
	tests := map[string]Style{"clientgo/a": ClientGo, "proxy/runtime/b": Runtime, "shell/a": Shell,
		"world": "", "supervisor": "", "rlab": "", "proxy/mine/a": "mine", "mine/b": "mine",
		"mine": "", "proxy/world/a": "", "My-Op/a": ""}
	for src, want := range tests {
		if got := FromSource(src); got != want {
			t.Errorf("FromSource(%q) = %q, want %q", src, got, want)
		}
	}
}

func TestCustom(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string
	}{
		{"mine", ""},
		{"py3", ""},
		{"shell", "built-in"},
		{"clientgo", "built-in"},
		{"world", "lower-case"},
		{"my-op", "lower-case"},
		{"Mine", "lower-case"},
		{"3op", "lower-case"},
		{"", "lower-case"},
		{strings.Repeat("a", 21), "lower-case"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Custom(tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Custom(%q) = %q, %v; want an error about %q", tt.name, s, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr := s.Traits(); tr.Builtin || tr.ElectsLeader || tr.Traces {
				t.Errorf("%q: Builtin %v, ElectsLeader %v, Traces %v; want none", s, tr.Builtin, tr.ElectsLeader, tr.Traces)
			}
			for _, ns := range []string{s.Namespace(), "rlab-alice-" + s.Namespace()} {
				if got := FromNamespace(ns); got != s {
					t.Errorf("FromNamespace(%q) = %q, want %q", ns, got, s)
				}
			}
			if got := FromSource("proxy/" + s.Source("b")); got != s {
				t.Errorf("FromSource = %q, want %q", got, s)
			}
		})
	}
	for _, ns := range []string{"default", "kube-system", "myecho-mine", "echo-", "echo-my-op"} {
		if got := FromNamespace(ns); got != "" {
			t.Errorf("FromNamespace(%q) = %q, want none", ns, got)
		}
	}
}

func TestPrefix(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
		ns      string // the clientgo namespace
	}{
		{"", false, "echo-clientgo"},
		{"rlab-alice-", false, "rlab-alice-echo-clientgo"},
		{"s1-", false, "s1-echo-clientgo"},
		{"rlab-alice", true, ""},                  // no dash at the end
		{"Rlab-", true, ""},                       // upper case
		{"1rlab-", true, ""},                      // starts with a digit
		{"rlab_a-", true, ""},                     // underscore
		{strings.Repeat("a", 50) + "-", true, ""}, // too long for a DNS label
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := ParsePrefix(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParsePrefix(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			ns := p.Namespace(ClientGo)
			if ns != tt.ns {
				t.Errorf("Namespace = %q, want %q", ns, tt.ns)
			}
			if len(ns) > 63 {
				t.Errorf("namespace %q is longer than a DNS label", ns)
			}
			if got := FromNamespace(ns); got != ClientGo {
				t.Errorf("FromNamespace(%q) = %q, want clientgo", ns, got)
			}
		})
	}
}

func TestUserPrefix(t *testing.T) {
	tests := []struct{ user, want string }{
		{"alice", "rlab-alice-"},
		{"Alice.B", "rlab-alice-b-"},
		{"system:serviceaccount:rlab-classroom:s1", "rlab-system-serviceaccount-rlab-classroom-s1-"},
		{"", "rlab-user-"},
		{"___", "rlab-user-"},
		{strings.Repeat("x", 80), "rlab-" + strings.Repeat("x", maxPrefix-len("rlab--")) + "-"},
	}
	for _, tt := range tests {
		got := UserPrefix(tt.user)
		if string(got) != tt.want {
			t.Errorf("UserPrefix(%q) = %q, want %q", tt.user, got, tt.want)
		}
		if _, err := ParsePrefix(string(got)); err != nil {
			t.Errorf("UserPrefix(%q) = %q is not a valid prefix: %v", tt.user, got, err)
		}
	}
	for _, ns := range []string{"xecho-shell", "echo-shell-x", "default"} {
		if got := FromNamespace(ns); got != "" {
			t.Errorf("FromNamespace(%q) = %q, want none", ns, got)
		}
	}
}
