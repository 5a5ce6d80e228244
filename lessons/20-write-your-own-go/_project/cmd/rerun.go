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
// with `go run ./cmd` from the project's folder, the manager stops when a
// .go file or go.mod under that folder changes; rlab then starts the same
// command again, which builds your new version. Built and run elsewhere,
// it changes nothing.

// stopOnEdit returns a context that ends with ctx, or once the project's
// source changes.
func stopOnEdit(ctx context.Context) context.Context {
	dir, err := os.Getwd()
	if err != nil {
		return ctx
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return ctx // not run from the project's folder
	}
	ctx, cancel := context.WithCancel(ctx)
	was := newest(dir)
	go func() {
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			if now := newest(dir); now.After(was) {
				setupLog.Info("Source changed: stopping, so that rlab runs the new version", "dir", dir)
				return
			}
		}
	}()
	return ctx
}

// newest is the latest modification time of the .go files and go.mod under
// dir.
func newest(dir string) time.Time {
	var t time.Time
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
		if info, err := d.Info(); err == nil && info.ModTime().After(t) {
			t = info.ModTime()
		}
		return nil
	})
	return t
}
