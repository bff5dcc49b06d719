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
