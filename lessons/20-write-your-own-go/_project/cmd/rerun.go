package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Not part of a kubebuilder scaffold: a convenience of rlab's lesson. Run
// from a folder that holds a go.mod (as `go run ./cmd` in the project's
// folder), the manager stops when a .go file or go.mod under that folder
// is saved, added or removed; rlab then starts the same command again,
// which builds your new version. A save made while go run still builds is
// seen at the next one. Run from any other folder, it changes nothing.

// stopOnEdit returns a context that ends with ctx, or once the source in
// the working directory changes.
func stopOnEdit(ctx context.Context) context.Context {
	dir, err := os.Getwd()
	if err != nil {
		return ctx
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return ctx // not run from a module's folder
	}
	ctx, cancel := context.WithCancel(ctx)
	was := sourceOf(dir)
	go func() {
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			if sourceOf(dir) != was {
				setupLog.Info("Source changed: stopping, so that rlab runs the new version", "dir", dir)
				return
			}
		}
	}()
	return ctx
}

// source is what tells one state of a folder's source from another.
type source struct {
	files  int
	size   int64
	newest time.Time
}

// sourceOf is the .go files and go.mod under dir, in folders whose names
// do not begin with a dot: how many, their size, and the latest
// modification time.
func sourceOf(dir string) source {
	var s source
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file saved while we walk: the next walk sees it
		}
		if d.IsDir() && path != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".go") || d.Name() == "go.mod") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		s.files++
		s.size += info.Size()
		if info.ModTime().After(s.newest) {
			s.newest = info.ModTime()
		}
		return nil
	})
	return s
}
