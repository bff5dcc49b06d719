package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
)

// ErrLineTooLong is returned when one line exceeds the decoder's MaxLine.
var ErrLineTooLong = errors.New("sse: line too long")

// ErrEventTooLarge is returned when one event's data (its data lines joined
// with "\n") exceeds the decoder's maxLine.
var ErrEventTooLarge = errors.New("sse: event data too large")

// Event is one dispatched SSE event.
type Event struct {
	// Event is the "event:" field; empty means the default "message".
	Event string
	// Data is the "data:" lines joined with "\n".
	Data []byte
	// ID is the last event ID (WHATWG): the value of the latest id: field
	// of this or an earlier event, "" after an empty one; an id: holding
	// NUL is ignored.
	ID string
}

// DefaultMaxLine bounds a single line (4 MiB): large tool-call arguments arrive in
// one data line on some providers.
const DefaultMaxLine = 4 << 20

// Read yields events from r until EOF. A stream that ends in the middle of a
// line yields io.ErrUnexpectedEOF after the complete events, so callers can
// tell a truncated stream from a finished one. A last event whose lines all
// ended but that no blank line followed ("data: [DONE]\n" and EOF, as some
// servers end their streams) is dispatched: its data is whole.
// maxLine bounds each line (ErrLineTooLong) and each event's data
// (ErrEventTooLarge); maxLine <= 0 means DefaultMaxLine.
func Read(r io.Reader, maxLine int) iter.Seq2[Event, error] {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return func(yield func(Event, error) bool) {
		sc := bufio.NewScanner(r)
		// Room for a line of maxLine bytes and its "\r\n": the limit is on
		// the line, not on the line and its break.
		sc.Buffer(make([]byte, 0, min(64<<10, maxLine)), maxLine+min(2, math.MaxInt-maxLine))
		cut := false // the last line scanned had no line break: EOF cut it
		sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
			n, line, err := scanLines(data, atEOF)
			if len(line) > maxLine {
				return 0, nil, bufio.ErrTooLong
			}
			if line != nil {
				cut = atEOF && n == len(line)
			}
			return n, line, err
		})
		var (
			ev      Event
			data    bytes.Buffer
			hasData bool
			pending bool
		)
		first := true
		for sc.Scan() {
			line := sc.Bytes()
			if first {
				// WHATWG: one leading U+FEFF is ignored.
				line, first = bytes.TrimPrefix(line, []byte("\ufeff")), false
			}
			if len(line) == 0 {
				cut = false // only a leading BOM was cut
				if hasData {
					ev.Data = bytes.Clone(data.Bytes())
					if !yield(ev, nil) {
						return
					}
				}
				ev, hasData, pending = Event{ID: ev.ID}, false, false
				data.Reset()
				continue
			}
			pending = true
			if line[0] == ':' {
				continue // comment / keep-alive
			}
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				ev.Event = string(value)
			case "data":
				// Each line is bounded; an event of endless lines must
				// not grow without bound either.
				n := data.Len() + len(value)
				if hasData {
					n++ // the "\n" joining the lines
				}
				if n > maxLine {
					yield(Event{}, fmt.Errorf("%w (limit %d bytes)", ErrEventTooLarge, maxLine))
					return
				}
				if hasData {
					data.WriteByte('\n')
				}
				data.Write(value)
				hasData = true
			case "id":
				if bytes.IndexByte(value, 0) < 0 {
					ev.ID = string(value)
				}
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				err = fmt.Errorf("%w (limit %d bytes)", ErrLineTooLong, maxLine)
			}
			yield(Event{}, err)
			return
		}
		switch {
		case cut:
			// Whatever the cut line was (a data line, or the event: line
			// or field name of an event whose data never came), the
			// stream did not finish.
			yield(Event{}, io.ErrUnexpectedEOF)
		case pending && hasData:
			ev.Data = bytes.Clone(data.Bytes())
			yield(ev, nil)
		}
	}
}

// scanLines splits on \n, \r\n or a lone \r.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\r' {
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if !atEOF {
				return 0, nil, nil // need more to know if \n follows
			}
		}
		return i + 1, data[:i], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}
