package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// MaxLine is the longest line a Decoder accepts; longer lines are malformed.
const MaxLine = 64 << 10

// Encode writes e as one JSON line.
func Encode(w io.Writer, e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// ParseLine decodes one JSON line into an Event. A line that is not a JSON
// object with a kind is an error: the caller counts it as malformed.
func ParseLine(line []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		return Event{}, fmt.Errorf("not an event: %w", err)
	}
	if e.Kind == "" {
		return Event{}, errors.New("not an event: no kind")
	}
	return e, nil
}

// Decode reads JSON lines from r until EOF, calling ev for each event and bad
// for each malformed line (truncated to 200 bytes). It never fails on input:
// only a read error ends it early, and that error is returned.
func Decode(r io.Reader, ev func(Event), bad func(line string)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		line = bytes.TrimSpace(line) // blank lines and CRLF endings are not events
		if len(line) > 0 {
			if e, perr := ParseLine(line); perr == nil {
				if e.Time.IsZero() {
					e.Time = time.Now()
				}
				ev(e)
			} else {
				if len(line) > 200 {
					line = line[:200]
				}
				bad(string(line))
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine returns the next line without its newline; a line over MaxLine is
// returned cut at MaxLine (and so fails to parse) with the rest skipped.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(buf) < MaxLine {
			buf = append(buf, chunk...)
		}
		if err != nil || !isPrefix {
			if len(buf) > MaxLine {
				buf = buf[:MaxLine]
			}
			return buf, err
		}
	}
}
