package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func collect(t *testing.T, in string, maxLine int) ([]Event, error) {
	t.Helper()
	var out []Event
	for ev, err := range Read(strings.NewReader(in), maxLine) {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

func TestRead_Framing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		want  []string
		names []string
		err   error
	}{
		{"lf", "data: a\n\ndata: b\n\n", []string{"a", "b"}, []string{"", ""}, nil},
		{"crlf", "event: x\r\ndata: a\r\n\r\n", []string{"a"}, []string{"x"}, nil},
		{"cr", "data: a\r\rdata: b\r\r", []string{"a", "b"}, []string{"", ""}, nil},
		{"multiline", "data: a\ndata: b\n\n", []string{"a\nb"}, []string{""}, nil},
		{"comments and blank", ": ping\n\n\ndata:x\n\n", []string{"x"}, []string{""}, nil},
		{"no space after colon", "event:e\ndata:{}\n\n", []string{"{}"}, []string{"e"}, nil},
		{"truncated", "data: a\n\ndata: {\"partial", []string{"a"}, []string{""}, io.ErrUnexpectedEOF},
		{"truncated after a second data line", "data: a\n\ndata: {}\ndata: {\"partial", []string{"a"}, []string{""}, io.ErrUnexpectedEOF},
		{"truncated, cr", "data: a\r\rdata: {\"partial", []string{"a"}, []string{""}, io.ErrUnexpectedEOF},
		// The last event's lines ended, no blank line came: it is whole.
		{"last event without blank line", "data: a\n\ndata: [DONE]\n", []string{"a", "[DONE]"}, []string{"", ""}, nil},
		{"last event without blank line, crlf", "event: message_stop\r\ndata: {}\r\n", []string{"{}"}, []string{"message_stop"}, nil},
		{"last event without blank line, cr", "data: a\r", []string{"a"}, []string{""}, nil},
		{"event without data is dropped", "event: x\n\n", nil, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := collect(t, tc.in, 0)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d events %+v, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if string(got[i].Data) != tc.want[i] || got[i].Event != tc.names[i] {
					t.Errorf("event %d = %q/%q, want %q/%q", i, got[i].Event, got[i].Data, tc.names[i], tc.want[i])
				}
			}
		})
	}
}

func TestRead_LineTooLong(t *testing.T) {
	t.Parallel()
	_, err := collect(t, "data: "+strings.Repeat("x", 100)+"\n\n", 32)
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
}

func TestRead_BreakStops(t *testing.T) {
	t.Parallel()
	n := 0
	for range Read(strings.NewReader("data: a\n\ndata: b\n\n"), 0) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("n = %d", n)
	}
}

func FuzzRead(f *testing.F) {
	f.Add("data: a\n\n")
	f.Add("event: x\r\ndata: {\"a\":1}\r\n\r\n")
	f.Add("data: a\rdata")
	f.Fuzz(func(t *testing.T, in string) {
		for range Read(strings.NewReader(in), 256) {
		}
	})
}

// A byte order mark at the start of the stream is not part of the first
// field name (WHATWG: "one leading U+FEFF BYTE ORDER MARK character must be
// ignored if any are present"): the first event is not lost.
func TestRead_LeadingBOM(t *testing.T) {
	t.Parallel()
	got, err := collect(t, "\ufeffevent: e\ndata: a\n\ndata: b\n\n", 0)
	if err != nil || len(got) != 2 || got[0].Event != "e" || string(got[0].Data) != "a" {
		t.Fatalf("got %+v, %v", got, err)
	}
	// Only one, and only at the start.
	got, err = collect(t, "\ufeff\ufeffdata: a\n\ndata: \ufeffb\n\n", 0)
	if err != nil || len(got) != 1 || string(got[0].Data) != "\ufeffb" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// FuzzRead_RoundTrip: events written as the WHATWG rules say a server must
// (each line of the data its own "data: " line, then a blank line; an
// optional comment before) are read back whole: the same name, the data
// with its line breaks as "\n", one event per frame, nothing after.
func FuzzRead_RoundTrip(f *testing.F) {
	f.Add("RunContent", `{"content":"a"}`, "second\r\nline\rthird\n", "ping")
	f.Add("", "", "\n", "")
	f.Add(" spaced", " leading space", "trailing\r", ":")
	f.Add("a:b", "data: nested", "\ufeffbom", "\ufeff")
	f.Fuzz(func(t *testing.T, name, data1, data2, comment string) {
		if strings.ContainsAny(name, "\r\n") || strings.ContainsAny(comment, "\r\n") {
			t.Skip("a name or comment cannot hold a line break")
		}
		lines := strings.NewReplacer("\r\n", "\n", "\r", "\n")
		var b strings.Builder
		b.WriteString(":" + comment + "\n")
		want := []Event{}
		for _, d := range []string{data1, data2} {
			if name != "" {
				b.WriteString("event: " + name + "\n")
			}
			norm := lines.Replace(d)
			for l := range strings.SplitSeq(norm, "\n") {
				b.WriteString("data: " + l + "\n")
			}
			b.WriteString("\n")
			want = append(want, Event{Event: name, Data: []byte(norm)})
		}
		got, err := collect(t, b.String(), 0)
		if err != nil {
			t.Fatalf("%q: %v", b.String(), err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d events, want %d", b.String(), len(got), len(want))
		}
		for i := range want {
			if got[i].Event != want[i].Event || string(got[i].Data) != string(want[i].Data) {
				t.Fatalf("%q: event %d = %q/%q, want %q/%q", b.String(), i, got[i].Event, got[i].Data, want[i].Event, want[i].Data)
			}
		}
	})
}

// A line of exactly maxLine bytes is within the limit, whatever its line
// break (LF, CRLF or CR); one byte more is ErrLineTooLong.
func TestRead_LineLimitIsInclusive(t *testing.T) {
	t.Parallel()
	const maxLine = 64
	line := "data: " + strings.Repeat("x", maxLine-len("data: "))
	for _, eol := range []string{"\n", "\r\n", "\r"} {
		got, err := collect(t, line+eol+eol, maxLine)
		if err != nil || len(got) != 1 || len(got[0].Data) != maxLine-len("data: ") {
			t.Errorf("eol %q: a line of maxLine bytes: %d events, %v", eol, len(got), err)
		}
		if _, err := collect(t, line+"x"+eol+eol, maxLine); !errors.Is(err, ErrLineTooLong) {
			t.Errorf("eol %q: a line of maxLine+1 bytes: err = %v, want ErrLineTooLong", eol, err)
		}
	}
	// Unterminated at EOF: the limit holds too.
	if _, err := collect(t, "data: a\n\n"+line+"x", maxLine); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("unterminated line of maxLine+1 bytes: err = %v, want ErrLineTooLong", err)
	}
}

// A stream cut in the middle of any line is truncated, also when the cut
// line is the first of its event (a field name, an event: line): the
// complete events come, then io.ErrUnexpectedEOF, never a clean end.
func TestRead_CutBeforeDataIsTruncated(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"data: a\n\nda",
		"data: a\n\nevent: message_st",
		"data: a\r\n\r\nevent: content_block_delta\r\ndat",
		"data: a\n\nid: 7",
	} {
		got, err := collect(t, in, 0)
		if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != 1 || string(got[0].Data) != "a" {
			t.Errorf("%q: %d events, err = %v, want the first event then io.ErrUnexpectedEOF", in, len(got), err)
		}
	}
}

// An event's data made of many lines, each within the limit, is bounded
// too: the decoder does not buffer an endless event.
func TestRead_EventDataIsBounded(t *testing.T) {
	t.Parallel()
	const maxLine = 64
	in := "data: a\n\n" + strings.Repeat("data: "+strings.Repeat("x", 40)+"\n", 10) + "\n"
	got, err := collect(t, in, maxLine)
	if !errors.Is(err, ErrEventTooLarge) || len(got) != 1 {
		t.Fatalf("%d events, err = %v, want one event then ErrEventTooLarge", len(got), err)
	}
	// Data of exactly maxLine bytes (line breaks counted) is whole.
	in = "data: " + strings.Repeat("x", 31) + "\ndata: " + strings.Repeat("y", 32) + "\n\n"
	if got, err := collect(t, in, maxLine); err != nil || len(got) != 1 || len(got[0].Data) != maxLine {
		t.Fatalf("data of maxLine bytes: %d events, %v", len(got), err)
	}
}

// The event ID is the WHATWG last event ID: it carries over to the events
// after the one that set it, an empty id: resets it, and an id holding NUL
// is ignored.
func TestRead_LastEventID(t *testing.T) {
	t.Parallel()
	got, err := collect(t, "id: 1\ndata: a\n\ndata: b\n\nid: 2\x003\ndata: c\n\nid\ndata: d\n\nid: 4\n\ndata: e\n\n", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1", "1", "1", "", "4"}
	if len(got) != len(want) {
		t.Fatalf("got %d events %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].ID != want[i] {
			t.Errorf("event %d (%q): id %q, want %q", i, got[i].Data, got[i].ID, want[i])
		}
	}
}

// spec decodes in as the WHATWG event-stream rules say, on the whole input
// at once, with Read's additions: a last event whose lines ended is
// dispatched, a cut line is io.ErrUnexpectedEOF, and the limits.
func spec(in string, maxLine int) ([]Event, error) {
	// Read counts a leading BOM in its first line's length.
	bom := 0
	if strings.HasPrefix(in, "\ufeff") {
		in, bom = in[len("\ufeff"):], len("\ufeff")
	}
	var (
		out                []Event
		name, id           string
		data               []string
		size               int
		hasData, truncated bool
	)
	for len(in) > 0 {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			i, truncated = len(in), true
		}
		line := in[:i]
		switch {
		case i == len(in):
			in = ""
		case strings.HasPrefix(in[i:], "\r\n"):
			in = in[i+2:]
		default:
			in = in[i+1:]
		}
		if bom+len(line) > maxLine {
			return out, ErrLineTooLong
		}
		bom = 0
		if line == "" {
			if hasData {
				out = append(out, Event{Event: name, Data: []byte(strings.Join(data, "\n")), ID: id})
			}
			name, data, size, hasData = "", nil, 0, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			size += len(value)
			if hasData {
				size++
			}
			if size > maxLine {
				return out, ErrEventTooLarge
			}
			data, hasData = append(data, value), true
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
	if truncated {
		return out, io.ErrUnexpectedEOF
	}
	if hasData {
		out = append(out, Event{Event: name, Data: []byte(strings.Join(data, "\n")), ID: id})
	}
	return out, nil
}

// FuzzRead_MatchesSpec: Read gives the events and the error spec gives,
// however the reader splits the stream.
func FuzzRead_MatchesSpec(f *testing.F) {
	f.Add("id: 1\ndata: a\r\n\r\ndata: b\rdata:c\r\r", uint8(16), uint8(0))
	f.Add("\ufeffevent: e\ndata\n\n: x\nid: 2\x00\ndata: "+strings.Repeat("y", 20)+"\n\n", uint8(8), uint8(1))
	f.Add("data: a\n\ndata: b\ndata: c\nda", uint8(6), uint8(2))
	f.Add("data: 0123456789\r\n\r\n", uint8(16), uint8(1))
	f.Fuzz(func(t *testing.T, in string, limit, chunking uint8) {
		maxLine := 4 + int(limit)%60
		var r io.Reader = strings.NewReader(in)
		switch chunking % 3 {
		case 1:
			r = iotest.OneByteReader(r)
		case 2:
			r = iotest.HalfReader(r)
		}
		var got []Event
		var err error
		for ev, e := range Read(r, maxLine) {
			if e != nil {
				err = e
				break
			}
			got = append(got, ev)
		}
		want, wantErr := spec(in, maxLine)
		if (err == nil) != (wantErr == nil) || (wantErr != nil && !errors.Is(err, wantErr)) {
			t.Fatalf("%q (maxLine %d): err = %v, want %v", in, maxLine, err, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("%q (maxLine %d): %d events %+v, want %d %+v", in, maxLine, len(got), got, len(want), want)
		}
		for i := range want {
			if got[i].Event != want[i].Event || string(got[i].Data) != string(want[i].Data) || got[i].ID != want[i].ID {
				t.Fatalf("%q (maxLine %d): event %d = %+v, want %+v", in, maxLine, i, got[i], want[i])
			}
		}
	})
}
