package launch

import (
	"compress/gzip"
	"context"
	"errors"
	"os"
	"strings"

	"github.com/kkloud/rlab/operators/style"
	"github.com/kkloud/rlab/sim/bus"
	"github.com/kkloud/rlab/sim/sandbox"
	"github.com/kkloud/rlab/tui/replay"
)

// RecordTo makes Start record the session to the file path (gzipped if
// it ends in .gz), for rlab replay: every trace event from before the
// sandbox starts, and the world's changes, until Close.
func (l *Launcher) RecordTo(path string) error {
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	l.recTo, l.recClose = fh, fh.Close
	if strings.HasSuffix(path, ".gz") {
		zw := gzip.NewWriter(fh)
		l.recTo, l.recClose = zw, func() error { return errors.Join(zw.Close(), fh.Close()) }
	}
	return nil
}

// record writes the session to RecordTo's file until Close.
func (l *Launcher) record(sub *bus.Sub, styles []style.Style) {
	rec, err := replay.NewRecorder(l.recTo, replay.Header{Backend: Info(l.sb.Cluster()).Backend, Version: l.sb.Cluster().Version(),
		Start: l.Began, Styles: styles, Echo: sandbox.SampleName})
	if err != nil {
		l.recErr = err
		return
	}
	ctx, cancel := context.WithCancel(context.Background()) // until Close, past the caller's ctx
	l.recCancel, l.recDone = cancel, make(chan struct{})
	go func() {
		defer close(l.recDone)
		l.recErr = rec.Run(ctx, replay.Live{Sub: sub, Snapshot: l.source.Snapshot, Version: l.source.Version})
	}()
}
