package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentryhq/agentry/model"
)

// ErrMalformedSummary: the summary model's answer is not a valid summary;
// the session keeps its previous one.
var ErrMalformedSummary = errors.New("memory: the session summary model's answer is malformed")

// MaxSummaryChars bounds a session summary's text.
const MaxSummaryChars = 10000

// Summary is a session's summary, stored in the session's summary column in
// Agno's SessionSummary shape.
type Summary struct {
	Summary string   `json:"summary"`
	Topics  []string `json:"topics,omitempty"`
	// UpdatedAt is an ISO 8601 time (Python's datetime.isoformat).
	UpdatedAt string `json:"updated_at,omitempty"`
}

// DecodeSummary reads a session's summary column; nil when empty or not a
// summary.
func DecodeSummary(raw json.RawMessage) *Summary {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var s Summary
	if json.Unmarshal(raw, &s) != nil || s.Summary == "" {
		return nil
	}
	return &s
}

// DefaultSummaryPrompt is the summary model's system message when
// Summarizer.SystemPrompt is empty.
const DefaultSummaryPrompt = `Summarize the conversation between a user and an assistant so that the assistant can pick it up later. ` +
	`Be concise, keep the facts and decisions that matter, and do not make anything up. ` +
	`When a previous summary is given, fold the new messages into it. ` +
	`Answer with only a JSON object: {"summary": "...", "topics": ["..."]}.`

var summaryFormat = &model.ResponseFormat{Name: "session_summary", Strict: true, Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "summary": {"type": "string", "description": "Summary of the session. Be concise and focus on only important information. Do not make anything up."},
    "topics": {"type": "array", "items": {"type": "string"}, "description": "Topics discussed in the session."}
  },
  "required": ["summary", "topics"],
  "additionalProperties": false
}`)}

// Summarizer writes session summaries with a model. It is safe for
// concurrent use.
type Summarizer struct {
	Model model.Model
	// SystemPrompt replaces DefaultSummaryPrompt.
	SystemPrompt string
	// now is time.Now, replaceable in tests.
	now func() time.Time
}

// Summarize folds a run's messages (user and assistant text; tool traffic
// and history are left out) into the previous summary. The work per run is
// bounded by the run, not by the session's length.
func (s *Summarizer) Summarize(ctx context.Context, prev *Summary, msgs []model.Message) (*Summary, model.Usage, error) {
	if s.Model == nil {
		return nil, model.Usage{}, errors.New("memory: Summarizer needs a Model")
	}
	var b strings.Builder
	if prev != nil && prev.Summary != "" {
		b.WriteString("Previous summary:\n" + prev.Summary + "\n\n")
	}
	b.WriteString("New messages:\n")
	for _, m := range msgs {
		if m.FromHistory || (m.Role != model.RoleUser && m.Role != model.RoleAssistant) {
			continue
		}
		if text := strings.TrimSpace(messageText(&m)); text != "" {
			fmt.Fprintf(&b, "%s: %s\n", m.Role, text)
		}
	}
	prompt := s.SystemPrompt
	if prompt == "" {
		prompt = DefaultSummaryPrompt
	}
	resp, err := s.Model.Invoke(ctx, &model.Request{
		Messages:       []model.Message{{Role: model.RoleSystem, Content: prompt}, {Role: model.RoleUser, Content: b.String()}},
		ResponseFormat: summaryFormat,
	})
	if err != nil {
		return nil, model.Usage{}, fmt.Errorf("memory: session summary model: %w", err)
	}
	sum, err := ParseSummary(resp.Message.Content)
	if err != nil {
		return nil, resp.Usage, err
	}
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	sum.UpdatedAt = isoTime(now())
	return sum, resp.Usage, nil
}

// ParseSummary decodes a summary model's answer: a JSON object with a
// non-empty "summary" and optional "topics", without NUL characters (a
// Markdown code fence around it is accepted). Anything else wraps
// ErrMalformedSummary.
func ParseSummary(content string) (*Summary, error) {
	raw := bytes.TrimSpace([]byte(stripFence(content)))
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s struct {
		Summary *string  `json:"summary"`
		Topics  []string `json:"topics"`
	}
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedSummary, err)
	}
	if trailing(raw, dec) {
		return nil, fmt.Errorf("%w: text after the JSON object", ErrMalformedSummary)
	}
	if s.Summary == nil || strings.TrimSpace(*s.Summary) == "" {
		return nil, fmt.Errorf("%w: no summary text", ErrMalformedSummary)
	}
	text := strings.TrimSpace(*s.Summary)
	if n := utf8.RuneCountInString(text); n > MaxSummaryChars || !utf8.ValidString(text) {
		return nil, fmt.Errorf("%w: summary is %d characters or not valid UTF-8; the limit is %d", ErrMalformedSummary, n, MaxSummaryChars)
	}
	if strings.ContainsRune(text, 0) || slices.ContainsFunc(s.Topics, func(t string) bool { return strings.ContainsRune(t, 0) }) {
		// Postgres stores no NUL in jsonb: the session's save would fail.
		return nil, fmt.Errorf("%w: a NUL character in the summary or its topics", ErrMalformedSummary)
	}
	if len(s.Topics) > 100 {
		return nil, fmt.Errorf("%w: %d topics; the limit is 100", ErrMalformedSummary, len(s.Topics))
	}
	var topics []string
	for _, t := range s.Topics {
		if t = strings.TrimSpace(t); t != "" {
			topics = append(topics, t)
		}
	}
	return &Summary{Summary: text, Topics: topics}, nil
}

// isoTime formats t as Python's datetime.isoformat does for an aware UTC time.
func isoTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000+00:00")
}
