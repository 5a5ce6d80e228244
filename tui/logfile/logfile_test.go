package logfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	const log = "one\ntwo\nthree\n" // 14 bytes
	tests := []struct {
		name       string
		from       int64
		limit      int
		want       string
		start, end int64
	}{
		{"the tail", -1, 6, "three\n", 8, 14},
		{"the tail of a short log", -1, 100, log, 0, 14},
		{"on from an offset", 4, 100, "two\nthree\n", 4, 14},
		{"a chunk at most", 4, 3, "two", 4, 7},
		{"nothing new", 14, 100, "", 14, 14},
		{"begun anew: from the start", 40, 100, log, 0, 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Read(strings.NewReader(log), int64(len(log)), tt.from, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if string(c.Data) != tt.want || c.From != tt.start || c.Next != tt.end {
				t.Errorf("Read(%d, %d) = %q [%d, %d), want %q [%d, %d)", tt.from, tt.limit, c.Data, c.From, c.Next, tt.want, tt.start, tt.end)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadFile(filepath.Join(dir, "none.log"), -1, 10); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing log: %v, want fs.ErrNotExist", err)
	}
	p := filepath.Join(dir, "mine-a.log")
	if err := os.WriteFile(p, []byte("deployment.apps/echo-hello serverside-applied\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ReadFile(p, -1, 1024)
	if err != nil || !strings.Contains(string(c.Data), "serverside-applied") || c.Next != 46 {
		t.Fatalf("ReadFile = %q, %d, %v", c.Data, c.Next, err)
	}
}
