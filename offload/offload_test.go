package offload_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentryhq/agentry/agentfs"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/offload"
)

var ctx = context.Background()

func bigResult(lines, width int) string {
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&b, "line %04d %s\n", i, strings.Repeat("x", width))
	}
	return b.String()
}

func newOffloader(t *testing.T, d *db.DB, cfg offload.Config) *offload.Offloader {
	t.Helper()
	o, err := offload.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

var call = offload.Call{Scope: offload.Scope{SessionID: "s1", RunID: "r1", UserID: "alice"}, ToolCallID: "c1", ToolName: "fetch", Args: `{"url":"x"}`}

var envelopeRE = regexp.MustCompile(`(?s)^<result id="(res_[0-9a-f]{24})" tool="fetch" lines="800" size="39\.8KB">\n(.*)</result>\nFull result stored: read it with read_result`)

func TestOffload_OverThresholdBecomesEnvelopeAndStaysReadable(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		o := newOffloader(t, d, offload.Config{})
		result := bigResult(800, 40) // 40,800 bytes
		out, err := o.Offload(ctx, call, result)
		if err != nil || !out.Offloaded || !out.Stored || out.Err != nil {
			t.Fatalf("outcome = %+v, %v", out, err)
		}
		m := envelopeRE.FindStringSubmatch(out.Content)
		if m == nil {
			t.Fatalf("envelope does not match:\n%s", out.Content)
		}
		if m[1] != out.ResultID || out.ResultID != offload.ResultID("s1", "r1", "c1") {
			t.Fatalf("id %s / %s", m[1], out.ResultID)
		}
		body := m[2]
		if !strings.HasPrefix(body, "line 0001 ") || !strings.Contains(body, "[... 775 lines omitted ...]\n") || !strings.HasSuffix(body, "line 0800 "+strings.Repeat("x", 40)+"\n") {
			t.Fatalf("preview:\n%s", body)
		}
		if len(out.Content) > 2500 {
			t.Fatalf("envelope is %d bytes", len(out.Content))
		}
		full, row, err := o.Get(ctx, call.Scope, out.ResultID)
		if err != nil || full != result {
			t.Fatalf("get: %d bytes, %v", len(full), err)
		}
		if row.ToolName != "fetch" || row.LineCount != 800 || row.SizeBytes != int64(len(result)) || row.RunID != "r1" || row.ToolCallID != "c1" {
			t.Fatalf("index row = %+v", row)
		}
		// the same call again keeps its id (stable per session, run, tool call)
		again, err := o.Offload(ctx, call, result)
		if err != nil || again.ResultID != out.ResultID {
			t.Fatalf("again: %+v %v", again, err)
		}
		list, err := o.List(ctx, call.Scope, 10)
		if err != nil || len(list) != 1 {
			t.Fatalf("list = %+v %v", list, err)
		}
	})
}

func TestOffload_AtOrBelowThresholdIsUnchanged(t *testing.T) {
	t.Parallel()
	o := newOffloader(t, testdbs.SQLite(t), offload.Config{ThresholdChars: 100, PreviewChars: 50})
	for _, s := range []string{"", "short", strings.Repeat("é", 100)} {
		out, err := o.Offload(ctx, call, s)
		if err != nil || out.Offloaded || out.Content != s {
			t.Fatalf("%q: %+v %v", s, out, err)
		}
	}
	out, err := o.Offload(ctx, call, strings.Repeat("é", 101))
	if err != nil || !out.Offloaded {
		t.Fatalf("101 chars: %+v %v", out, err)
	}
}

func TestOffload_OtherSessionOrUserAndForgedIDsAreNotFound(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		o := newOffloader(t, d, offload.Config{})
		out, err := o.Offload(ctx, call, bigResult(800, 40))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []offload.Scope{{SessionID: "s1", UserID: "bob"}, {SessionID: "s2", UserID: "alice"}, {SessionID: "s1"}, {}} {
			_, err := o.Read(ctx, s, out.ResultID, offload.ReadRange{})
			if !errors.Is(err, offload.ErrNotFound) {
				t.Fatalf("%+v read: %v", s, err)
			}
			_, err = o.Search(ctx, s, out.ResultID, "line", 0)
			if !errors.Is(err, offload.ErrNotFound) {
				t.Fatalf("%+v search: %v", s, err)
			}
		}
		for _, id := range []string{"res_000000000000000000000000", "", "../../etc/passwd", strings.Repeat("r", 300), "\xff"} {
			if _, err := o.Read(ctx, call.Scope, id, offload.ReadRange{}); !errors.Is(err, offload.ErrNotFound) {
				t.Fatalf("forged id %q: %v", id, err)
			}
		}
	})
}

func TestOffload_QuotaRefusalGivesStoredFalseAndRunGoesOn(t *testing.T) {
	t.Parallel()
	o := newOffloader(t, testdbs.SQLite(t), offload.Config{MaxFileBytes: 30_000})
	out, err := o.Offload(ctx, call, bigResult(800, 40))
	if err != nil {
		t.Fatal(err)
	}
	if out.Stored || out.Err == nil || !strings.Contains(out.Content, `stored="false"`) || !strings.Contains(out.Content, "line 0001") ||
		!strings.Contains(out.Content, "line 0800") || strings.Contains(out.Content, "read_result(") {
		t.Fatalf("outcome = %+v\n%s", out, out.Content)
	}
	if _, err := o.Read(ctx, call.Scope, out.ResultID, offload.ReadRange{}); !errors.Is(err, offload.ErrNotFound) {
		t.Fatalf("a refused result is readable: %v", err)
	}
	// 100 MB: refused by the per-file quota, envelope stays small
	huge := strings.Repeat("0123456789abcdef\n", 100<<20/17)
	out, err = o.Offload(ctx, call, huge)
	if err != nil || out.Stored || len(out.Content) > 3000 {
		t.Fatalf("100 MB: stored=%v len=%d err=%v", out.Stored, len(out.Content), err)
	}
}

func TestOffload_BinaryOutputIsRefusedAndNothingStored(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	o := newOffloader(t, d, offload.Config{ThresholdChars: 100, PreviewChars: 10})
	for _, s := range []string{strings.Repeat("\xff\xfe", 100), strings.Repeat("a\x00", 100)} {
		if _, err := o.Offload(ctx, call, s); !errors.Is(err, offload.ErrNotText) {
			t.Fatalf("error = %v, want ErrNotText", err)
		}
	}
	if list, _ := o.List(ctx, call.Scope, 10); len(list) != 0 {
		t.Fatalf("stored: %+v", list)
	}
}

func TestRead_PagesAreCappedAndContinue(t *testing.T) {
	t.Parallel()
	o := newOffloader(t, testdbs.SQLite(t), offload.Config{})
	out, _ := o.Offload(ctx, call, bigResult(1000, 10))
	p, err := o.Read(ctx, call.Scope, out.ResultID, offload.ReadRange{})
	if err != nil || p.StartLine != 1 || p.EndLine != 400 || p.NextStartLine != 401 || strings.Count(p.Text, "\n") != 400 {
		t.Fatalf("page 1: %+v %v", p.EndLine, err)
	}
	p, _ = o.Read(ctx, call.Scope, out.ResultID, offload.ReadRange{StartLine: 990, EndLine: 2000})
	if p.EndLine != 1000 || p.NextStartLine != 0 || !strings.HasPrefix(p.Text, "line 0990") {
		t.Fatalf("last page: %+v", p)
	}
	p, _ = o.Read(ctx, call.Scope, out.ResultID, offload.ReadRange{StartLine: 5, EndLine: 6, StartChar: 5})
	if p.Text != "0005 xxxxxxxxxx\nline 0006 xxxxxxxxxx\n" {
		t.Fatalf("start_char page: %q", p.Text)
	}
	for _, r := range []offload.ReadRange{{StartLine: 1001}, {StartLine: -1}, {StartLine: 5, EndLine: 4}, {StartChar: -1}} {
		if _, err := o.Read(ctx, call.Scope, out.ResultID, r); !errors.Is(err, offload.ErrBadRange) {
			t.Fatalf("%+v: %v", r, err)
		}
	}
	// one 40,000-char line pages by characters
	one := offload.Call{Scope: call.Scope, ToolCallID: "c2", ToolName: "fetch"}
	out, _ = o.Offload(ctx, one, strings.Repeat("y", 40_000))
	p, _ = o.Read(ctx, call.Scope, out.ResultID, offload.ReadRange{})
	if len(p.Text) != offload.MaxReadChars || p.NextStartLine != 1 || p.NextStartChar != offload.MaxReadChars {
		t.Fatalf("long line page: len %d next %d/%d", len(p.Text), p.NextStartLine, p.NextStartChar)
	}
}

func TestSearch_MatchesAreCappedClippedAndPatternsChecked(t *testing.T) {
	t.Parallel()
	o := newOffloader(t, testdbs.SQLite(t), offload.Config{})
	out, _ := o.Offload(ctx, call, bigResult(800, 1000))
	ms, err := o.Search(ctx, call.Scope, out.ResultID, `line 07[0-9]3`, 2)
	if err != nil || len(ms) != 10 || ms[0].LineNumber != 703 || len(ms[0].Before) != 2 || len(ms[0].After) != 2 {
		t.Fatalf("matches = %d %v", len(ms), err)
	}
	if n := len([]rune(ms[0].Line)); n > offload.MaxMatchLineChars+40 {
		t.Fatalf("line not clipped: %d chars", n)
	}
	ms, _ = o.Search(ctx, call.Scope, out.ResultID, `x`, 99)
	if len(ms) != offload.MaxMatches || len(ms[5].Before) != offload.MaxContextLines {
		t.Fatalf("cap: %d matches, %d context", len(ms), len(ms[5].Before))
	}
	for pat, want := range map[string]error{"(": offload.ErrBadPattern, "": offload.ErrBadPattern, strings.Repeat("a", 600): offload.ErrPatternTooLong} {
		if _, err := o.Search(ctx, call.Scope, out.ResultID, pat, 0); !errors.Is(err, want) {
			t.Fatalf("pattern %.10q: %v", pat, err)
		}
	}
}

func TestTTL_ExpiredResultsAreNotFoundAndSwept(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		o := newOffloader(t, d, offload.Config{TTL: offload.Duration(1)})
		out, err := o.Offload(ctx, call, bigResult(800, 40))
		if err != nil || !out.Stored {
			t.Fatal(out, err)
		}
		offload.SetClock(o, 2)
		if _, err := o.Read(ctx, call.Scope, out.ResultID, offload.ReadRange{}); !errors.Is(err, offload.ErrNotFound) {
			t.Fatalf("expired read: %v", err)
		}
		n, err := o.Sweep(ctx, 100)
		if err != nil || n != 1 {
			t.Fatalf("sweep = %d %v", n, err)
		}
		ns, _ := offload.NamespaceOf(o, call.Scope)
		if u, _ := d.FileUsage(ctx, ns); u.Files != 0 {
			t.Fatalf("file left: %+v", u)
		}
	})
}

func FuzzEnvelopeAndPage(f *testing.F) {
	f.Add(bigResult(30, 5), 1, 0, 0)
	f.Add("a\nb\n\nc", 2, 3, 1)
	f.Add(strings.Repeat("é", 200), 1, 1, 150)
	o, err := offload.New(testdbs.SQLite(f), offload.Config{ThresholdChars: 20, PreviewChars: 10, PreviewLines: 3})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string, start, end, startChar int) {
		env := offload.Envelope(o, "res_x", "t", s, true)
		if !strings.HasPrefix(env, `<result id="res_x" tool="t" lines="`) || !strings.Contains(env, "</result>") {
			t.Fatalf("bad envelope %q", env)
		}
		if n := len([]rune(env)); n > 10+3*60+5*60+400 {
			t.Fatalf("envelope of %d chars", n)
		}
		p, err := offload.PageOf("res_x", s, offload.ReadRange{StartLine: start, EndLine: end, StartChar: startChar})
		if err != nil {
			if !errors.Is(err, offload.ErrBadRange) {
				t.Fatal(err)
			}
			return
		}
		if len([]rune(p.Text)) > offload.MaxReadChars+offload.MaxReadLines || p.EndLine-p.StartLine >= offload.MaxReadLines {
			t.Fatalf("page over the caps: %+v", p)
		}
	})
}

func TestSweepEvery_DeletesExpiredResultsInTheBackground(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	o := newOffloader(t, d, offload.Config{TTL: offload.Duration(1)})
	out, err := o.Offload(ctx, call, bigResult(800, 40))
	if err != nil || !out.Stored {
		t.Fatal(out, err)
	}
	offload.SetClock(o, 5)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { o.SweepEvery(sctx, 10*time.Millisecond, func(err error) { t.Error(err) }); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := d.GetToolResult(ctx, out.ResultID); errors.Is(err, db.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not delete the expired result")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

// A match far into one long line (minified JSON, a log without newlines)
// is shown: the line is clipped around the match, and the omitted count
// before it is the start_char read_result continues from.
func TestSearch_AMatchDeepInALongLineIsShown(t *testing.T) {
	t.Parallel()
	o := newOffloader(t, testdbs.SQLite(t), offload.Config{})
	line := strings.Repeat("é", 30_000) + "NEEDLE" + strings.Repeat("ü", 10_000)
	out, err := o.Offload(ctx, call, "head\n"+line+"\ntail\n")
	if err != nil || !out.Stored {
		t.Fatal(out, err)
	}
	ms, err := o.Search(ctx, call.Scope, out.ResultID, `NEEDLE`, 1)
	if err != nil || len(ms) != 1 || ms[0].LineNumber != 2 {
		t.Fatalf("matches = %+v, %v", ms, err)
	}
	shown := ms[0].Line
	if !strings.Contains(shown, "NEEDLE") {
		t.Fatalf("the match is not in the line shown: %.80q…", shown)
	}
	if n := len([]rune(shown)); n > offload.MaxMatchLineChars+80 {
		t.Fatalf("line shown in %d chars", n)
	}
	var skipped int
	if _, err := fmt.Sscanf(shown, "[... %d chars omitted ...] ", &skipped); err != nil {
		t.Fatalf("no omitted count before the match: %.80q", shown)
	}
	p, err := o.Read(ctx, call.Scope, out.ResultID, offload.ReadRange{StartLine: 2, EndLine: 2, StartChar: skipped})
	if err != nil {
		t.Fatal(err)
	}
	_, window, _ := strings.Cut(shown, " chars omitted ...] ")
	window, _, _ = strings.Cut(window, " [... ")
	if !strings.HasPrefix(p.Text, window) {
		t.Fatalf("read from start_char=%d gives %.40q, search showed %.40q", skipped, p.Text, window)
	}
	if ms[0].Before[0] != "head" || ms[0].After[0] != "tail" {
		t.Fatalf("context = %q %q", ms[0].Before, ms[0].After)
	}
}

// A start_char past the end of its line is a bad range, as a start_line
// past the end is, not an empty line.
func TestRead_StartCharPastTheLineIsABadRange(t *testing.T) {
	t.Parallel()
	o := newOffloader(t, testdbs.SQLite(t), offload.Config{})
	out, _ := o.Offload(ctx, call, bigResult(1000, 10)) // lines of 20 characters
	for _, r := range []offload.ReadRange{{StartLine: 5, StartChar: 21}, {StartLine: 5, StartChar: 1 << 40}} {
		if p, err := o.Read(ctx, call.Scope, out.ResultID, r); !errors.Is(err, offload.ErrBadRange) {
			t.Fatalf("%+v: %.30q, %v", r, p.Text, err)
		}
	}
	p, err := o.Read(ctx, call.Scope, out.ResultID, offload.ReadRange{StartLine: 5, EndLine: 5, StartChar: 20})
	if err != nil || p.Text != "\n" {
		t.Fatalf("start_char at the end of the line: %q, %v", p.Text, err)
	}
}

// A threshold at or below the default preview (1,200 characters) is a
// valid setting: the default preview shrinks to half the threshold. Only a
// preview_chars given at or over the threshold is refused.
func TestConfig_ASmallThresholdTakesASmallerDefaultPreview(t *testing.T) {
	t.Parallel()
	o, err := offload.New(testdbs.SQLite(t), offload.Config{ThresholdChars: 1000})
	if err != nil {
		t.Fatalf("threshold_chars 1000 alone: %v", err)
	}
	if c := o.Config(); c.PreviewChars != 500 {
		t.Fatalf("default preview_chars under threshold 1000 = %d, want 500", c.PreviewChars)
	}
	var s offload.Setting
	if err := yaml.Unmarshal([]byte("threshold_chars: 800"), &s); err != nil || s.On() == nil {
		t.Fatalf("offload_tool_results: {threshold_chars: 800}: %v", err)
	}
	if _, err := offload.New(testdbs.SQLite(t), offload.Config{ThresholdChars: 1000, PreviewChars: 1000}); !errors.Is(err, offload.ErrInvalidConfig) {
		t.Fatalf("preview_chars 1000 under threshold 1000: %v", err)
	}
}

// max_namespace_files is agentfs's cap on a session's stored results
// (default 10,000): past it a result is kept as a preview, the run going
// on, as past the byte quotas.
func TestOffload_MaxNamespaceFilesKeepsTheNextResultAsAPreview(t *testing.T) {
	t.Parallel()
	o := newOffloader(t, testdbs.SQLite(t), offload.Config{MaxNamespaceFiles: 1})
	first, err := o.Offload(ctx, call, bigResult(800, 40))
	if err != nil || !first.Stored {
		t.Fatalf("first: %+v %v", first, err)
	}
	second := call
	second.ToolCallID = "c2"
	out, err := o.Offload(ctx, second, bigResult(800, 40))
	if err != nil || out.Stored || !errors.Is(out.Err, agentfs.ErrQuotaExceeded) || !strings.Contains(out.Content, `stored="false"`) {
		t.Fatalf("second: %+v %v", out, err)
	}
	if _, err := offload.New(testdbs.SQLite(t), offload.Config{MaxNamespaceFiles: -1}); !errors.Is(err, offload.ErrInvalidConfig) {
		t.Fatalf("negative max_namespace_files: %v", err)
	}
}
