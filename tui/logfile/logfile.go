// Package logfile reads an operator replica's log in chunks, the way the
// screen's log view follows it: its tail first, then what is appended, and
// from the start again when the log begins anew.
package logfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Chunk is a piece of a log: Data, the bytes from offset From up to Next,
// where the next read goes on.
type Chunk struct {
	Data       []byte
	From, Next int64
}

// Read reads a chunk of a log of size bytes from r: from offset from (the
// last limit bytes if from < 0; from the start if the log is shorter than
// from, as a log begun anew is), at most limit bytes.
func Read(r io.ReaderAt, size, from int64, limit int) (Chunk, error) {
	switch {
	case from < 0:
		from = size - int64(limit)
	case from > size:
		from = 0
	}
	from = min(max(from, 0), size)
	c := Chunk{Data: make([]byte, min(size-from, int64(limit))), From: from}
	n, err := r.ReadAt(c.Data, from)
	c.Data, c.Next = c.Data[:n], from+int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("read log: %w", err)
	}
	return c, nil
}

// ReadFile is Read of the file at path; a missing file is an error
// wrapping fs.ErrNotExist (a replica that has written nothing yet).
func ReadFile(path string, from int64, limit int) (Chunk, error) {
	f, err := os.Open(path)
	if err != nil {
		return Chunk{}, fmt.Errorf("log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Chunk{}, fmt.Errorf("log: %w", err)
	}
	return Read(f, fi.Size(), from, limit)
}
