package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// pathWarning says what is wrong, and the line that fixes it, when typing
// `rlab` in the student's shell (whose PATH is path) would not run self,
// this rlab: every lesson has them type `rlab do …`, `rlab lesson …`. ""
// when it would.
func pathWarning(path, self string) string {
	if self == "" {
		return ""
	}
	if abs, err := filepath.EvalSymlinks(self); err == nil {
		self = abs
	}
	dir := filepath.Dir(self)
	fix := fmt.Sprintf(`export PATH="%s:$PATH"`, dir)
	if strings.HasPrefix(filepath.Base(filepath.Dir(dir)), "go-build") { // go run: a directory that will be gone
		fix = "`make install` in rlab's checkout"
	}
	found := lookIn(path, "rlab")
	if found == "" {
		return fmt.Sprintf("rlab is not on your PATH, and the lessons type `rlab …`: in the terminal where you type them, run  %s  (or `make install` once, in rlab's checkout)", fix)
	}
	a, errA := os.Stat(found)
	b, errB := os.Stat(self)
	if errA == nil && errB == nil && os.SameFile(a, b) {
		return ""
	}
	return fmt.Sprintf("`rlab` in your shell runs %s, not this rlab (%s): in the terminal where you type the lessons' commands, run  %s", found, self, fix)
}

// lookIn is exec.LookPath over a PATH of our choosing: the first executable
// file name in its directories, or "".
func lookIn(path, name string) string {
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// warnPath prints pathWarning once, on stderr, and returns it for the
// screen's status line.
func warnPath(stderr io.Writer) string {
	self, _ := os.Executable()
	w := pathWarning(os.Getenv("PATH"), self)
	if w != "" {
		fmt.Fprintln(stderr, "rlab: note:", w)
	}
	return w
}
