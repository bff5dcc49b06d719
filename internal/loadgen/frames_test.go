package loadgen

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/internal/sse"
)

type frame struct{ event, data string }

func readFrames(in string, maxLine int) ([]frame, error) {
	f := newFrameReader(maxLine)
	f.reset(strings.NewReader(in))
	var out []frame
	for {
		ev, data, err := f.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, frame{string(ev), string(data)})
	}
}

func TestFrameReader_Framing(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 40<<10) // longer than the 16 KiB read buffer
	tests := []struct {
		name string
		in   string
		want []frame
		err  error
	}{
		{"agentos frames", "event: RunStarted\ndata: {\"a\":1}\n\nevent: RunCompleted\ndata: {}\n\n",
			[]frame{{"RunStarted", `{"a":1}`}, {"RunCompleted", "{}"}}, nil},
		{"crlf", "event: x\r\ndata: a\r\n\r\n", []frame{{"x", "a"}}, nil},
		{"multi-line data", "data: a\ndata: b\n\n", []frame{{"", "a\nb"}}, nil},
		{"comments and keep-alives", ": ping\n\n\nevent:e\ndata:x\n\n", []frame{{"e", "x"}}, nil},
		{"event without data is dropped", "event: x\n\ndata: y\n\n", []frame{{"", "y"}}, nil},
		{"line longer than the buffer", "event: big\ndata: " + long + "\n\n", []frame{{"big", long}}, nil},
		{"cut off inside a frame", "data: a\n\nevent: b\ndata: {\"partial", []frame{{"", "a"}}, io.ErrUnexpectedEOF},
		// As internal/sse reads them: a last event whose lines all ended is
		// whole without its blank line; a line EOF cut is a cut stream even
		// before the event's data; one leading byte order mark is ignored.
		{"last event without its blank line", "event: RunStarted\ndata: {}\n\nevent: RunCompleted\ndata: {\"a\":1}\n",
			[]frame{{"RunStarted", "{}"}, {"RunCompleted", `{"a":1}`}}, nil},
		{"cut inside the event line", "data: a\n\nevent: RunComp", []frame{{"", "a"}}, io.ErrUnexpectedEOF},
		{"cut inside an unknown field", "0", nil, io.ErrUnexpectedEOF},
		{"leading byte order mark", "\ufeffevent: x\ndata: y\n\n", []frame{{"x", "y"}}, nil},
		{"empty stream", "", nil, nil},
	}
	for _, tt := range tests {
		got, err := readFrames(tt.in, 1<<20)
		if !errors.Is(err, tt.err) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.err)
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %d frames, want %d", tt.name, len(got), len(tt.want))
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: frame %d = %.40q, want %.40q", tt.name, i, got[i], tt.want[i])
			}
		}
	}
}

func TestFrameReader_RejectsOverlongLines(t *testing.T) {
	t.Parallel()
	_, err := readFrames("data: "+strings.Repeat("y", 100<<10)+"\n\n", 64<<10)
	if !errors.Is(err, errLineTooLong) {
		t.Fatalf("err = %v, want errLineTooLong", err)
	}
}

// An event's data is bounded as its lines are: a stream of data lines that
// never ends its event grew the reader's buffer without bound (until the
// request's timeout), whatever the line limit.
func TestFrameReader_BoundsAnEventsData(t *testing.T) {
	t.Parallel()
	_, err := readFrames(strings.Repeat("data: "+strings.Repeat("z", 1<<10)+"\n", 100)+"\n", 64<<10)
	if !errors.Is(err, errEventTooLarge) {
		t.Fatalf("err = %v, want errEventTooLarge", err)
	}
	got, err := readFrames(strings.Repeat("data: z\n", 10)+"\n", 19)
	if err != nil || len(got) != 1 || got[0].data != strings.TrimSuffix(strings.Repeat("z\n", 10), "\n") {
		t.Fatalf("an event of exactly the limit: %q, %v", got, err)
	}
}

// FuzzFrameReader checks the reader against internal/sse, the repo's
// reference decoder, on streams without lone "\r" line ends (which AgentOS
// never writes and the generator does not accept).
func FuzzFrameReader(f *testing.F) {
	f.Add("event: RunStarted\ndata: {}\n\n")
	f.Add("event: x\r\ndata: a\r\n\r\n: c\ndata\ndata:\n\n")
	f.Add("data: a\n\nevent: b\ndata: {")
	f.Fuzz(func(t *testing.T, in string) {
		if strings.Contains(strings.ReplaceAll(in, "\r\n", ""), "\r") {
			return
		}
		got, gotErr := readFrames(in, 1<<20)
		var want []frame
		var wantErr error
		for ev, err := range sse.Read(strings.NewReader(in), 1<<20) {
			if err != nil {
				wantErr = err
				break
			}
			want = append(want, frame{ev.Event, string(ev.Data)})
		}
		if !errors.Is(gotErr, wantErr) {
			t.Fatalf("err = %v, internal/sse says %v", gotErr, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("%d frames %q, internal/sse has %d %q", len(got), got, len(want), want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("frame %d = %q, internal/sse has %q", i, got[i], want[i])
			}
		}
	})
}
