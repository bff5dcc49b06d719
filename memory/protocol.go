package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
)

// Limits of one manager answer. An answer over them is malformed.
const (
	// MaxMemoryChars bounds one memory's text (AgentOS's limit).
	MaxMemoryChars = 5000
	// MaxUpdates bounds the changes of one answer.
	MaxUpdates = 100
)

var (
	// ErrMalformedUpdates: the model's answer is not a valid list of memory
	// changes. Nothing of it was applied.
	ErrMalformedUpdates = errors.New("memory: the memory model's answer is malformed")
	// ErrNoUser: the operation needs a user id. Memories are per user; a run
	// without a user id stores none.
	ErrNoUser = errors.New("memory: no user id: memories are stored per user only")
)

// Op is a change's kind.
type Op string

// The changes a model may ask for.
const (
	OpAdd    Op = "add"
	OpUpdate Op = "update"
	OpDelete Op = "delete"
)

// Update is one change the model asked for.
type Update struct {
	Op Op `json:"op"`
	// MemoryID names the memory to update or delete (absent for add).
	MemoryID string   `json:"memory_id,omitempty"`
	Memory   string   `json:"memory,omitempty"`
	Topics   []string `json:"topics,omitempty"`
}

// answer is the JSON object the model answers with.
type answer struct {
	Updates []Update `json:"updates"`
}

// updatesSchema is the response format the manager asks for.
var updatesSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "updates": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "op": {"type": "string", "enum": ["add", "update", "delete"]},
          "memory_id": {"type": "string", "description": "id of the memory to update or delete; empty for add"},
          "memory": {"type": "string", "description": "the memory, a third-person statement about the user; empty for delete"},
          "topics": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["op", "memory_id", "memory", "topics"],
        "additionalProperties": false
      }
    }
  },
  "required": ["updates"],
  "additionalProperties": false
}`)

// updatesFormat asks for the answer as a JSON object (structured output).
var updatesFormat = &model.ResponseFormat{Name: "memory_updates", Schema: updatesSchema, Strict: true}

// ParseUpdates decodes and checks a model's answer against the memories the
// user has (by id). Any defect fails the whole answer with
// ErrMalformedUpdates and a reason: an unknown field, op or memory id, a
// missing or over-long text, a NUL character (Postgres stores none), too
// many changes or topics, one memory changed twice. A Markdown code fence around the JSON is accepted, since
// models add one even when asked not to.
func ParseUpdates(content string, known map[string]bool) ([]Update, error) {
	raw := bytes.TrimSpace([]byte(stripFence(content)))
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: empty answer", ErrMalformedUpdates)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var a answer
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedUpdates, err)
	}
	if trailing(raw, dec) {
		return nil, fmt.Errorf("%w: text after the JSON object", ErrMalformedUpdates)
	}
	if a.Updates == nil {
		return nil, fmt.Errorf(`%w: no "updates" list (send {"updates": []} for no change)`, ErrMalformedUpdates)
	}
	if len(a.Updates) > MaxUpdates {
		return nil, fmt.Errorf("%w: %d changes; the limit is %d", ErrMalformedUpdates, len(a.Updates), MaxUpdates)
	}
	touched := map[string]bool{}
	for i := range a.Updates {
		u := &a.Updates[i]
		u.Memory = strings.TrimSpace(u.Memory)
		if err := checkUpdate(u, known, touched); err != nil {
			return nil, fmt.Errorf("%w: updates[%d]: %v", ErrMalformedUpdates, i, err)
		}
	}
	return a.Updates, nil
}

func checkUpdate(u *Update, known, touched map[string]bool) error {
	switch u.Op {
	case OpAdd:
		if u.MemoryID != "" {
			return errors.New("an add has no memory_id")
		}
	case OpUpdate, OpDelete:
		if !known[u.MemoryID] {
			return fmt.Errorf("%s of memory %q, which the user does not have", u.Op, u.MemoryID)
		}
		if touched[u.MemoryID] {
			return fmt.Errorf("memory %q is changed twice", u.MemoryID)
		}
		touched[u.MemoryID] = true
	default:
		return fmt.Errorf("unknown op %q (want add, update or delete)", u.Op)
	}
	if u.Op == OpDelete {
		return nil
	}
	switch n := utf8.RuneCountInString(u.Memory); {
	case !utf8.ValidString(u.Memory):
		return errors.New("memory is not valid UTF-8")
	case strings.ContainsRune(u.Memory, 0):
		return errors.New("memory holds a NUL character")
	case n == 0:
		return fmt.Errorf("%s without memory text", u.Op)
	case n > MaxMemoryChars:
		return fmt.Errorf("memory is %d characters; the limit is %d", n, MaxMemoryChars)
	}
	if len(u.Topics) > db.MaxMemoryTopics {
		return fmt.Errorf("%d topics; the limit is %d", len(u.Topics), db.MaxMemoryTopics)
	}
	topics := u.Topics[:0]
	for _, t := range u.Topics {
		if t = strings.TrimSpace(t); t != "" {
			if len(t) > 255 || !utf8.ValidString(t) || strings.ContainsRune(t, 0) {
				return errors.New("a topic is over 255 bytes, not valid UTF-8 or holds a NUL character")
			}
			topics = append(topics, t)
		}
	}
	u.Topics = topics
	return nil
}

// trailing reports whether raw holds more than the value dec decoded.
// (dec.More cannot tell: it answers false before a '}' or ']', so
// `{"updates":[]}}` would pass as one object.)
func trailing(raw []byte, dec *json.Decoder) bool {
	return len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0
}

// stripFence removes a Markdown code fence (```json … ```) around s.
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") {
		return s
	}
	t = strings.TrimPrefix(t, "```")
	if nl := strings.IndexByte(t, '\n'); nl >= 0 {
		t = t[nl+1:]
	} else {
		return s
	}
	return strings.TrimSuffix(strings.TrimSpace(t), "```")
}
