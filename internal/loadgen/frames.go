package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// errLineTooLong is returned for an SSE line longer than the reader's limit.
var errLineTooLong = errors.New("sse line too long")

// errEventTooLarge is returned for an event whose data (its data lines
// joined) is longer than the reader's limit.
var errEventTooLarge = errors.New("sse event data too large")

// frameReader decodes the SSE frames AgentOS writes ("event: X\ndata: {...}\n\n",
// lines ending in "\n" or "\r\n"), with the framing rules of internal/sse but
// reusing its buffers across responses: the generator shares the cores with
// the server it measures, so the client side must stay cheap.
type frameReader struct {
	br    *bufio.Reader
	max   int
	first bool   // no line of this stream read yet (a BOM may lead it)
	long  []byte // a line longer than br's buffer
	event []byte
	data  []byte
}

func newFrameReader(maxLine int) *frameReader {
	return &frameReader{br: bufio.NewReaderSize(nil, 16<<10), max: maxLine}
}

func (f *frameReader) reset(r io.Reader) { f.br.Reset(r); f.first = true }

// next returns the next frame's event name and data, valid until the next
// call. As internal/sse, it returns io.EOF after the last complete frame (a
// last frame whose lines all ended is complete without its blank line),
// io.ErrUnexpectedEOF when the stream ends inside a line, and
// errEventTooLarge for a frame whose data passes the line limit.
func (f *frameReader) next() (event, data []byte, err error) {
	f.event, f.data = f.event[:0], f.data[:0]
	hasData, pending := false, false
	for {
		line, cut, err := f.readLine()
		if err == io.EOF {
			if pending && hasData {
				return f.event, f.data, nil
			}
			return nil, nil, io.EOF
		}
		if err != nil {
			return nil, nil, err
		}
		if f.first {
			// WHATWG: one leading U+FEFF is ignored.
			line, f.first = bytes.TrimPrefix(line, []byte("\ufeff")), false
		}
		if len(line) == 0 {
			if cut {
				continue // only a leading BOM, cut by EOF: nothing was cut
			}
			if hasData {
				return f.event, f.data, nil
			}
			f.event, pending = f.event[:0], false
			continue
		}
		if cut {
			// The stream ended inside this line: whatever it was (data,
			// the event line or a field of an event whose data never
			// came), the stream did not finish.
			return nil, nil, io.ErrUnexpectedEOF
		}
		pending = true
		if line[0] == ':' {
			continue // comment / keep-alive
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			f.event = append(f.event[:0], value...)
		case "data":
			// Each line is bounded; a frame of endless lines must not
			// grow without bound either.
			n := len(f.data) + len(value)
			if hasData {
				n++ // the "\n" joining the lines
			}
			if n > f.max {
				return nil, nil, fmt.Errorf("%w (limit %d bytes)", errEventTooLarge, f.max)
			}
			if hasData {
				f.data = append(f.data, '\n')
			}
			f.data = append(f.data, value...)
			hasData = true
		}
	}
}

// readLine returns one line without its "\n" or "\r\n"; a last line without
// a line end is returned with cut set, then io.EOF.
func (f *frameReader) readLine() (line []byte, cut bool, err error) {
	line, err = f.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		f.long = append(f.long[:0], line...)
		for err == bufio.ErrBufferFull && len(f.long) <= f.max+2 {
			line, err = f.br.ReadSlice('\n')
			f.long = append(f.long, line...)
		}
		line = f.long
	}
	switch {
	case err == io.EOF && len(line) == 0:
		return nil, false, io.EOF
	case err == io.EOF:
		cut = true // returned now, io.EOF on the next call
	case err != nil && err != bufio.ErrBufferFull:
		return nil, false, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > f.max || err == bufio.ErrBufferFull {
		return nil, false, fmt.Errorf("%w (limit %d bytes)", errLineTooLong, f.max)
	}
	return line, cut, nil
}
