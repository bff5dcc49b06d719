package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// Session names. A session with a stored session_name shows it; one without
// shows the name AgentOS 3.0 derives (agno.os.utils.get_session_name), so a
// web client lists named rows after a reload. The name is derived when the
// session is read, not stored: sessions written by Agno or migrated from 2.x
// have no stored name either, and storing one would make it searchable
// (?session_name=) where AgentOS's is not. A page of sessions costs one extra
// query (db.DB.FirstRuns) that reads one run per unnamed session.

// storedSessionName returns session_data.session_name when it is set (an
// empty string set on purpose counts, as in AgentOS).
func storedSessionName(data map[string]any) (string, bool) {
	name, ok := data["session_name"].(string)
	return name, ok
}

// sessionNames derives the names of the sessions that have none stored,
// keyed by session id, from their first runs. A run whose run_data cannot be
// decoded leaves its session unnamed and is logged.
func (s *Server) sessionNames(ctx context.Context, d *db.DB, sessions []db.Session) (map[string]string, error) {
	var unnamed []db.Session
	for i := range sessions {
		if _, ok := storedSessionName(sessionData(&sessions[i])); !ok {
			unnamed = append(unnamed, sessions[i])
		}
	}
	names := make(map[string]string, len(unnamed))
	if len(unnamed) == 0 {
		return names, nil
	}
	first, err := d.FirstRuns(ctx, unnamed)
	if errors.Is(err, db.ErrCorruptRow) {
		s.log.WarnContext(ctx, "session names: unreadable runs", "request_id", requestID(ctx), "err", err)
	} else if err != nil {
		return nil, err
	}
	for i := range unnamed {
		sess := &unnamed[i]
		var r *db.Run
		if fr, ok := first[sess.SessionID]; ok {
			r = &fr
		}
		names[sess.SessionID] = derivedSessionName(sess, r)
	}
	return names, nil
}

// nameSource is what a session's name is derived from in a run's run_data.
type nameSource struct {
	Input    json.RawMessage `json:"input"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// derivedSessionName is AgentOS's name for session s without a stored one,
// given its first top-level run (nil when it has none):
//   - agent and team sessions: the run's first user message with text, else
//     the text of its input (a run stored before its messages, e.g. RUNNING);
//   - workflow sessions: the run's input, a string as is and an object as
//     Python's json.dumps writes it; otherwise "New <workflow name> Session".
//
// AgentOS renders a run without messages from its whole input object; here
// the input's text is used instead, which is what its first user message
// holds once the run is stored.
func derivedSessionName(s *db.Session, first *db.Run) string {
	if first == nil {
		return ""
	}
	var src nameSource
	if json.Unmarshal(first.RunData, &src) != nil {
		return ""
	}
	if s.SessionType == run.TypeWorkflow {
		return workflowSessionName(s, src.Input)
	}
	for _, m := range src.Messages {
		var text string
		if m.Role == "user" && json.Unmarshal(m.Content, &text) == nil && text != "" {
			return text
		}
	}
	return inputText(src.Input)
}

// inputText is the text of a stored input: a string as is, an
// {"input_content": …} object's content (text, or JSON for structured
// input), anything else as JSON.
func inputText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	var in struct {
		InputContent json.RawMessage `json:"input_content"`
	}
	if json.Unmarshal(raw, &in) == nil && len(in.InputContent) > 0 {
		return inputText(in.InputContent)
	}
	return string(raw)
}

// workflowSessionName is AgentOS's name for a workflow session from its first
// run's input.
func workflowSessionName(s *db.Session, input json.RawMessage) string {
	input = bytes.TrimSpace(input)
	var text string
	if json.Unmarshal(input, &text) == nil {
		return text
	}
	if len(input) > 0 && input[0] == '{' {
		var in struct {
			InputContent json.RawMessage `json:"input_content"`
		}
		// Workflow runs older Agentry versions stored keep the input in a run input object.
		if json.Unmarshal(input, &in) == nil && len(in.InputContent) > 0 {
			return inputText(in.InputContent)
		}
		if name, err := pythonJSON(input); err == nil {
			return name
		}
	}
	var wd struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(s.WorkflowData, &wd) == nil && wd.Name != "" {
		return "New " + wd.Name + " Session"
	}
	return ""
}

// pythonJSON re-encodes a JSON value the way Python's json.dumps does by
// default: ", " and ": " separators, keys in their order, non-ASCII and
// control characters escaped as \uXXXX.
func pythonJSON(raw json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	if err := writePythonJSON(dec, &b); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writePythonJSON(dec *json.Decoder, b *strings.Builder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		closing, object := "]", v == '{'
		if object {
			closing = "}"
		}
		b.WriteString(v.String())
		for i := 0; dec.More(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if object {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				writePythonString(b, key.(string))
				b.WriteString(": ")
			}
			if err := writePythonJSON(dec, b); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteString(closing)
	case string:
		writePythonString(b, v)
	case json.Number:
		b.WriteString(v.String())
	case bool:
		fmt.Fprint(b, v)
	case nil:
		b.WriteString("null")
	}
	return nil
}

func writePythonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r >= ' ' && r <= '~':
			b.WriteRune(r)
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
}
