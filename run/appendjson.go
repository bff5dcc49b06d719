package run

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/agentryhq/agentry/model"
)

// appendPlainOutput appends o as run_data to dst without reflection, for the
// runs the agent stores on every turn: string fields, a text input and
// content, messages without parts, tool calls, thinking or provider data, and
// metrics whose details are one "model" list, none of them with Extra. It
// reports false (and leaves dst unspecified) for anything else, which the
// encoding/json path writes. The bytes are those encoding/json writes for
// outputJSON with HTML escaping off: TestAppendPlainOutput_SameBytes and
// FuzzAppendPlainOutput compare the two.
func appendPlainOutput(dst []byte, o *Output) ([]byte, bool) {
	if len(o.Extra) > 0 || !plainOutput(o) {
		return dst, false
	}
	b := append(dst, '{')
	b = appendStr(b, "run_id", o.RunID)
	b = appendStr(b, "agent_id", o.AgentID)
	b = appendStr(b, "agent_name", o.AgentName)
	b = appendStr(b, "team_id", o.TeamID)
	b = appendStr(b, "team_name", o.TeamName)
	b = appendStr(b, "workflow_id", o.WorkflowID)
	b = appendStr(b, "workflow_name", o.WorkflowName)
	b = appendStr(b, "session_id", o.SessionID)
	b = appendStr(b, "parent_run_id", o.ParentRunID)
	b = appendStr(b, "workflow_step_id", o.WorkflowStepID)
	b = appendStr(b, "user_id", o.UserID)
	if s, ok := o.Content.(string); ok { // a non-nil any: "" too
		b = appendAlways(b, "content", s)
	}
	b = appendStr(b, "content_type", o.ContentType)
	b = appendStr(b, "model", o.Model)
	b = appendStr(b, "model_provider", o.ModelProvider)
	b = appendStr(b, "reasoning_content", o.ReasoningContent)
	b = appendStr(b, "paused_step_name", o.PausedStepName)
	b = appendStr(b, "pause_kind", o.PauseKind)
	b = appendStr(b, "status", string(o.Status))
	b = appendInt(b, "created_at", o.CreatedAt)
	b = appendInt(b, "updated_at", o.UpdatedAt)
	if in := o.Input; in != nil {
		b = appendKey(b, "input")
		b = append(b, '{')
		if s, ok := in.InputContent.(string); ok {
			b = appendAlways(b, "input_content", s)
		}
		b = append(b, '}')
	}
	var ok bool
	if m := o.Metrics; m != nil {
		b = appendKey(b, "metrics")
		b = append(b, '{')
		if b, ok = appendUsage(b, &m.Usage, false); !ok {
			return dst, false
		}
		for _, f := range [...]struct {
			name string
			v    float64
		}{{"duration", m.Duration}, {"time_to_first_token", m.TimeToFirstToken}, {"start_time", m.StartTime}, {"end_time", m.EndTime}} {
			if b, ok = appendFloat(b, f.name, f.v); !ok {
				return dst, false
			}
		}
		if list := m.Details["model"]; len(m.Details) > 0 {
			b = appendKey(b, "details")
			b = append(b, `{"model":[`...)
			for i := range list {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, '{')
				b = appendAlways(b, "id", list[i].ID)
				b = appendAlways(b, "provider", list[i].Provider)
				if b, ok = appendUsage(b, &list[i].Usage, true); !ok {
					return dst, false
				}
				b = append(b, '}')
			}
			b = append(b, "]}"...)
		}
		b = append(b, '}')
	}
	if len(o.Messages) > 0 {
		b = appendKey(b, "messages")
		b = append(b, '[')
		for i := range o.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendPlainMessage(b, &o.Messages[i]); !ok {
				return dst, false
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

// plainOutput reports whether appendPlainOutput writes o: every field it
// does not write is empty, and those it writes hold the plain forms.
func plainOutput(o *Output) bool {
	if o.Content != nil {
		if _, ok := o.Content.(string); !ok {
			return false
		}
	}
	if in := o.Input; in != nil {
		if in.bare || len(in.Extra) > 0 || !in.storedBare() || o.Type() == TypeWorkflow {
			return false
		}
		if _, ok := in.InputContent.(string); !ok && in.InputContent != nil {
			return false
		}
	}
	if m := o.Metrics; m != nil {
		if len(m.Extra) > 0 || m.Steps != nil {
			return false
		}
		if len(m.Details) > 0 {
			list, ok := m.Details["model"]
			if len(m.Details) != 1 || !ok || len(list) == 0 {
				return false
			}
			for i := range list {
				if list[i].Extra != nil {
					return false
				}
			}
		}
	}
	for i := range o.Messages {
		m := &o.Messages[i]
		if m.Extra != nil || len(m.Parts) > 0 || len(m.ToolCalls) > 0 || len(m.Thinking) > 0 || len(m.ProviderData) > 0 ||
			m.Metrics != nil && m.Metrics.Extra != nil {
			return false
		}
	}
	return len(o.Tools)+len(o.ReasoningSteps)+len(o.ReasoningMessages)+len(o.Images)+len(o.Videos)+len(o.Audio)+len(o.Files) == 0 &&
		o.ResponseAudio == nil && len(o.Citations) == 0 && len(o.References) == 0 && len(o.Metadata) == 0 &&
		len(o.SessionState) == 0 && len(o.Events) == 0 && len(o.Requirements) == 0 && len(o.MemberResponses) == 0 &&
		len(o.StepResults) == 0 && len(o.StepExecutorRuns) == 0 && len(o.StepRequirements) == 0 &&
		o.PausedStepIndex == nil && len(o.ErrorRequirements) == 0
}

// appendPlainMessage appends m as plainMessage is written (appendPlainOutput
// has checked it holds nothing else).
func appendPlainMessage(b []byte, m *model.Message) ([]byte, bool) {
	b = append(b, '{')
	b = appendStr(b, "id", m.ID)
	b = appendAlways(b, "role", string(m.Role))
	b = appendStr(b, "content", m.Content)
	b = appendStr(b, "tool_call_id", m.ToolCallID)
	b = appendStr(b, "tool_name", m.ToolName)
	if len(m.ToolArgs) > 0 {
		b = appendKey(b, "tool_args")
		buf := bytes.NewBuffer(b)
		if json.Compact(buf, m.ToolArgs) != nil {
			return b, false // encoding/json's error
		}
		b = buf.Bytes()
	}
	b = appendBool(b, "tool_call_error", m.ToolCallError)
	b = appendStr(b, "reasoning_content", m.ReasoningContent)
	b = appendBool(b, "from_history", m.FromHistory)
	if m.Metrics != nil {
		b = appendKey(b, "metrics")
		b = append(b, '{')
		var ok bool
		if b, ok = appendUsage(b, &m.Metrics.Usage, true); !ok {
			return b, false
		}
		b = append(b, '}')
	}
	b = appendInt(b, "created_at", m.CreatedAt)
	return append(b, '}'), true
}

// appendUsage appends u's members (omitempty); its timing only where the
// struct embedding it does not shadow them (Metrics has its own).
func appendUsage(b []byte, u *model.Usage, timing bool) ([]byte, bool) {
	b = appendInt(b, "input_tokens", int64(u.InputTokens))
	b = appendInt(b, "output_tokens", int64(u.OutputTokens))
	b = appendInt(b, "total_tokens", int64(u.TotalTokens))
	b = appendInt(b, "cache_read_tokens", int64(u.CacheReadTokens))
	b = appendInt(b, "cache_write_tokens", int64(u.CacheWriteTokens))
	b = appendInt(b, "reasoning_tokens", int64(u.ReasoningTokens))
	var ok bool
	if b, ok = appendFloat(b, "cost", u.Cost); !ok || !timing {
		return b, ok
	}
	if b, ok = appendFloat(b, "duration", u.Duration); !ok {
		return b, false
	}
	return appendFloat(b, "time_to_first_token", u.TimeToFirstToken)
}

// appendKey appends a member's name (names here need no escaping), after a
// comma unless it is the object's first.
func appendKey(b []byte, name string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

func appendStr(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendAlways(b, name, s)
}

func appendAlways(b []byte, name, s string) []byte {
	return appendString(appendKey(b, name), s)
}

func appendInt(b []byte, name string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(appendKey(b, name), n, 10)
}

func appendBool(b []byte, name string, v bool) []byte {
	if !v {
		return b
	}
	return append(appendKey(b, name), "true"...)
}

// appendFloat writes f as encoding/json writes a float64; false for NaN and
// infinities, which it refuses.
func appendFloat(b []byte, name string, f float64) ([]byte, bool) {
	if f == 0 {
		return b, true
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	b = appendKey(b, name)
	if out, ok := appendNanos(b, f); ok {
		return out, true
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendNanos writes f when it is a whole number of nanoseconds under a
// million seconds (a duration, as the run's metrics hold them) exactly as
// strconv's shortest 'f' form writes it, without its general algorithm: f
// is then the double nearest to ns/1e9, a decimal of at most 15 significant
// digits, and no shorter decimal rounds to the same double (15-digit
// decimals are further apart than a double's rounding interval), so that
// decimal, trailing zeros cut, is the shortest form. ok false: anything
// else (the caller formats it).
func appendNanos(b []byte, f float64) ([]byte, bool) {
	if !(f >= 1e-6 && f < 1e6) {
		return b, false
	}
	ns := int64(math.Round(f * 1e9))
	if float64(ns)/1e9 != f {
		return b, false
	}
	b = strconv.AppendInt(b, ns/1e9, 10)
	frac := ns % 1e9
	if frac == 0 {
		return b, true
	}
	digits := 9
	for frac%10 == 0 {
		frac /= 10
		digits--
	}
	b = append(b, '.')
	var tmp [9]byte
	for i := digits - 1; i >= 0; i-- {
		tmp[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(b, tmp[:digits]...), true
}

const hexDigits = "0123456789abcdef"

// Byte-class masks for appendString's eight-bytes-at-a-time scan.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plainWord reports whether none of the eight bytes of w (little-endian
// from s) needs escaping: no control byte (< 0x20), no '"', no '\\' and
// nothing at or above 0x80 (UTF-8 that appendString checks rune by rune).
// With no high bit set, (x-lsb*n)&^x&msb is non-zero exactly when some byte
// of x is below n (n <= 0x80), and (x-lsb)&^x&msb when some byte is zero.
func plainWord(w uint64) bool {
	quote := w ^ (lsb * '"')
	slash := w ^ (lsb * '\\')
	return w&msb == 0 && (w-lsb*0x20)&^w&msb == 0 && (quote-lsb)&^quote&msb == 0 && (slash-lsb)&^slash&msb == 0
}

// appendString is encoding/json's string encoding with HTML escaping off:
// quotes, backslashes and control characters escaped, invalid UTF-8 as
// U+FFFD, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainWord(uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
			uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56) {
			i += 8
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
