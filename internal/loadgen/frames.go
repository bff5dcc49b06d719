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

// frameReader decodes the SSE frames AgentOS writes ("event: X\ndata: {...}\n\n",
// lines ending in "\n" or "\r\n"), with the framing rules of internal/sse but
// reusing its buffers across responses: the generator shares the cores with
// the server it measures, so the client side must stay cheap.
type frameReader struct {
	br    *bufio.Reader
	max   int
	long  []byte // a line longer than br's buffer
	event []byte
	data  []byte
}

func newFrameReader(maxLine int) *frameReader {
	return &frameReader{br: bufio.NewReaderSize(nil, 16<<10), max: maxLine}
}

func (f *frameReader) reset(r io.Reader) { f.br.Reset(r) }

// next returns the next frame's event name and data, valid until the next
// call. It returns io.EOF after the last complete frame and
// io.ErrUnexpectedEOF when the stream ends inside a frame.
func (f *frameReader) next() (event, data []byte, err error) {
	f.event, f.data = f.event[:0], f.data[:0]
	hasData, pending := false, false
	for {
		line, err := f.readLine()
		if err == io.EOF {
			if pending && hasData {
				return nil, nil, io.ErrUnexpectedEOF
			}
			return nil, nil, io.EOF
		}
		if err != nil {
			return nil, nil, err
		}
		if len(line) == 0 {
			if hasData {
				return f.event, f.data, nil
			}
			f.event, pending = f.event[:0], false
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
			f.event = append(f.event[:0], value...)
		case "data":
			if hasData {
				f.data = append(f.data, '\n')
			}
			f.data = append(f.data, value...)
			hasData = true
		}
	}
}

// readLine returns one line without its "\n" or "\r\n"; a last line without
// a line end is returned before io.EOF.
func (f *frameReader) readLine() ([]byte, error) {
	line, err := f.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		f.long = append(f.long[:0], line...)
		for err == bufio.ErrBufferFull && len(f.long) <= f.max {
			line, err = f.br.ReadSlice('\n')
			f.long = append(f.long, line...)
		}
		line = f.long
	}
	if len(line) > f.max+2 || (err == bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%w (limit %d bytes)", errLineTooLong, f.max)
	}
	switch {
	case err == io.EOF && len(line) == 0:
		return nil, io.EOF
	case err != nil && err != io.EOF:
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}
