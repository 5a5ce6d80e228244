package launch

import (
	"bytes"
	"sync"
)

// lineWriter sends each line written to it (split at \n or \r, so a
// redrawn progress line is sent each time); Flush sends a last, unfinished
// one. The screen shows a control-plane build this way.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	send func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexAny(w.buf, "\r\n")
		if i < 0 {
			break
		}
		if i > 0 {
			w.send(string(w.buf[:i]))
		}
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

// Flush sends what is left of an unfinished line.
func (w *lineWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.send(string(w.buf))
		w.buf = nil
	}
	return nil
}
