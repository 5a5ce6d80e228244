package marks

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWrite: with $RLAB_MARKS set, each name is written once, as
// "<name> <unix nanoseconds>", at the moment of its first Write; Read
// gives them back.
func TestWrite(t *testing.T) {
	file := filepath.Join(t.TempDir(), "marks")
	t.Setenv(Env, file)
	before := time.Now()
	Write("a.first")
	Write("b.second")
	Write("a.first") // again: not written
	after := time.Now()

	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(string(b), "\n") {
		t.Fatalf("marks file:\n%s\nwant two lines, a.first then b.second", b)
	}
	for i, name := range []string{"a.first", "b.second"} {
		got, ns, ok := strings.Cut(lines[i], " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || got != name || err != nil || n < before.UnixNano() || n > after.UnixNano() {
			t.Errorf("line %d = %q, want %q and unix nanoseconds in [%d, %d]", i+1, lines[i], name, before.UnixNano(), after.UnixNano())
		}
	}
	m, err := Read(file)
	if err != nil || len(m) != 2 || m["a.first"].Before(before) || m["b.second"].Before(m["a.first"]) || m["b.second"].After(after) {
		t.Errorf("Read = %v, %v; want a.first then b.second, between %v and %v", m, err, before, after)
	}
}

// TestWriteUnset: without $RLAB_MARKS nothing is written anywhere, and a
// name not written then is written once the variable is set.
func TestWriteUnset(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv(Env, "")
	Write("c.unset")
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("with %s unset: %v, %v; want nothing written", Env, entries, err)
	}
	file := filepath.Join(dir, "marks")
	t.Setenv(Env, file)
	Write("c.unset")
	if m, err := Read(file); err != nil || len(m) != 1 || m["c.unset"].IsZero() {
		t.Fatalf("Read = %v, %v; want c.unset", m, err)
	}
}

// TestWriteFails: a file that cannot be written is no error of the
// caller's; there is simply no mark.
func TestWriteFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "missing-dir", "marks")
	t.Setenv(Env, file)
	Write("d.fails") // does not panic, returns
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("stat %s: %v, want no file", file, err)
	}
}

// TestRead: a file not there has no marks; a line not ended (being
// written) and lines that are no marks are skipped; the first of a name
// counts.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          map[string]int64
	}{
		{"no file", "", nil},
		{"two marks", "x 10\ny 20\n", map[string]int64{"x": 10, "y": 20}},
		{"the first of a name", "x 10\nx 30\n", map[string]int64{"x": 10}},
		{"a line not ended", "x 10\ny 2", map[string]int64{"x": 10}},
		{"not marks", "garbage\nz abc\nx 10\n", map[string]int64{"x": 10}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, strconv.Itoa(i))
			if tt.content != "" {
				if err := os.WriteFile(file, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Read(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Read = %v, want %v", got, tt.want)
			}
			for name, ns := range tt.want {
				if got[name].UnixNano() != ns {
					t.Errorf("%s = %d, want %d", name, got[name].UnixNano(), ns)
				}
			}
		})
	}
}
