package model

import (
	"bytes"
	"encoding/json"

	"github.com/agentryhq/agentry/internal/lossless"
)

// ToolCall is a model's request to call a tool. Arguments is the raw JSON text the
// model produced; it may be invalid and is validated before the call.
//
// In JSON a tool call has the OpenAI shape Agno stores and its providers read
// back: {"id", "type": "function", "function": {"name", "arguments"}} with
// arguments a JSON string. The flat {"id", "name", "arguments"} shape older
// Agentry versions stored is read too, and written back nested.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
	// ThoughtSignature is Gemini's opaque signature of the reasoning behind
	// this call, sent back with it on the next turn; stored beside the
	// call's id as Agno stores it ("thought_signature").
	ThoughtSignature string

	// stored keeps, as JSON text (so ToolCall stays comparable), what the
	// fields above flatten away from a stored call: its type when not
	// "function", its other members, the function object's other members,
	// and arguments stored as something other than a JSON string. Empty for
	// calls that carry none of these.
	stored string
}

// storedCall is what ToolCall.stored holds.
type storedCall struct {
	Type    string                     `json:"t,omitempty"`
	Extra   map[string]json.RawMessage `json:"x,omitempty"`
	FnExtra map[string]json.RawMessage `json:"f,omitempty"`
	RawArgs json.RawMessage            `json:"a,omitempty"`
}

// toolCallJSON is a tool call as stored.
type toolCallJSON struct {
	ID               string        `json:"id,omitempty"`
	Type             string        `json:"type,omitempty"`
	Function         *toolFunction `json:"function,omitempty"`
	ThoughtSignature string        `json:"thought_signature,omitempty"`
}

// plainToolCallJSON is a tool call with nothing stored beyond its fields,
// the common case: no nested MarshalJSON whose output encoding/json would
// scan once more.
type plainToolCallJSON struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	ThoughtSignature string `json:"thought_signature,omitempty"`
}

type toolFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	extra     map[string]json.RawMessage
}

type toolFunctionJSON toolFunction

func (f toolFunction) MarshalJSON() ([]byte, error) {
	return lossless.Marshal((*toolFunctionJSON)(&f), f.extra)
}

func (f *toolFunction) UnmarshalJSON(b []byte) error {
	var v toolFunctionJSON
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.extra = extra
	*f = toolFunction(v)
	return nil
}

// MarshalJSON writes the call nested, OpenAI-shaped, as Agno stores it.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	if c.stored == "" {
		w := plainToolCallJSON{ID: c.ID, Type: "function", ThoughtSignature: c.ThoughtSignature}
		w.Function.Name, w.Function.Arguments = c.Name, c.Arguments
		return lossless.Encode(&w)
	}
	var st storedCall
	if c.stored != "" {
		if err := json.Unmarshal([]byte(c.stored), &st); err != nil {
			return nil, err
		}
	}
	w := toolCallJSON{ID: c.ID, Type: st.Type, ThoughtSignature: c.ThoughtSignature}
	if _, kept := st.Extra["type"]; w.Type == "" && !kept {
		w.Type = "function"
	}
	_, storedFn := st.Extra["function"]
	if !storedFn || c.Name != "" || c.Arguments != "" || st.RawArgs != nil {
		f := &toolFunction{Name: c.Name, extra: st.FnExtra}
		if st.RawArgs != nil && argumentsText(st.RawArgs) == c.Arguments {
			f.Arguments = st.RawArgs
		} else {
			b, err := lossless.Encode(c.Arguments)
			if err != nil {
				return nil, err
			}
			f.Arguments = b
		}
		w.Function = f
	}
	return lossless.Marshal(&w, st.Extra)
}

// UnmarshalJSON reads a nested or a flat tool call.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var w toolCallJSON
	extra, err := lossless.Unmarshal(b, &w)
	if err != nil {
		return err
	}
	*c = ToolCall{ID: w.ID, ThoughtSignature: w.ThoughtSignature}
	st := storedCall{Extra: extra}
	if w.Type != "function" {
		st.Type = w.Type
	}
	var args json.RawMessage
	if f := w.Function; f != nil {
		c.Name, args, st.FnExtra = f.Name, f.Arguments, f.extra
	} else {
		// Flat: name and arguments beside the id.
		if raw, ok := extra["name"]; ok && json.Unmarshal(raw, &c.Name) == nil {
			delete(extra, "name")
		}
		if raw, ok := extra["arguments"]; ok {
			args = raw
			delete(extra, "arguments")
		}
	}
	if len(args) > 0 && args[0] != '"' {
		var buf bytes.Buffer
		if err := json.Compact(&buf, args); err != nil {
			return err
		}
		args = buf.Bytes()
		st.RawArgs = args
	}
	c.Arguments = argumentsText(args)
	if st.Type != "" || len(st.Extra) > 0 || len(st.FnExtra) > 0 || st.RawArgs != nil {
		// Not json.Marshal: it would escape <, > and & inside RawArgs, which
		// then no longer matches Arguments.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(st); err != nil {
			return err
		}
		c.stored = string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	return nil
}

// argumentsText is the arguments as the text a model produced: a JSON
// string's value, "" for null, anything else as its JSON text.
func argumentsText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}
