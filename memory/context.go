package memory

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentryhq/agentry/db"
)

// Bounds of the memories put in the system message (AddMemoriesToContext):
// the most recently updated first, at most ContextMemories of them and
// ContextChars characters of memory text; the rest are left out (the
// manager still sees up to DefaultMaxMemories).
const (
	ContextMemories = 50
	ContextChars    = 8000
)

// ContextBlock is the system message's memories section in Agno's wording:
// the user's memories (bounded as above, most recent first), or the note
// that there are none yet. agentic adds the guidance for the
// update_user_memory tool.
func ContextBlock(ms []db.Memory, agentic bool) string {
	var b strings.Builder
	if len(ms) > 0 {
		b.WriteString("You have access to user info and preferences from previous interactions that you can use to personalize your response:\n\n")
		b.WriteString("<memories_from_previous_interactions>")
		chars := 0
		for i, m := range ms {
			n := utf8.RuneCountInString(m.Memory)
			if i == ContextMemories || chars+n > ContextChars {
				break
			}
			chars += n
			b.WriteString("\n- ")
			b.WriteString(m.Memory)
		}
		b.WriteString("\n</memories_from_previous_interactions>\n\n")
		b.WriteString("Note: this information is from previous interactions and may be updated in this conversation. " +
			"You should always prefer information from this conversation over the past memories.\n")
	} else {
		b.WriteString("You have the capability to retain memories from previous interactions with the user, " +
			"but have not had any interactions with the user yet.\n")
	}
	if agentic {
		b.WriteString("\n<updating_user_memories>\n" +
			"- You have access to the `" + UpdateToolName + "` tool that you can use to add new memories, update existing memories or delete memories.\n" +
			"- If the user's message includes information that should be captured as a memory, use the `" + UpdateToolName + "` tool to update your memory database.\n" +
			"- Memories should include details that could personalize ongoing interactions with the user.\n" +
			"- Use this tool if the user asks to update their memory or delete a memory.\n" +
			"- If you use the `" + UpdateToolName + "` tool, remember to pass on the response to the user.\n" +
			"</updating_user_memories>\n")
	}
	return strings.TrimSpace(b.String())
}

// SummaryBlock is the system message's session summary section
// (AddSessionSummaryToContext), in Agno's wording; empty without a summary.
func SummaryBlock(s *Summary) string {
	if s == nil || s.Summary == "" {
		return ""
	}
	return "Here is a brief summary of your previous interactions:\n\n" +
		"<summary_of_previous_interactions>\n" + s.Summary + "\n</summary_of_previous_interactions>\n\n" +
		"Note: this information is from previous interactions and may be outdated. " +
		"You should ALWAYS prefer information from this conversation over the past summary."
}

// memoryDict is Agno's UserMemory.to_dict: null members left out, times in
// ISO 8601.
type memoryDict struct {
	MemoryID  string   `json:"memory_id"`
	Memory    string   `json:"memory"`
	Topics    []string `json:"topics,omitempty"`
	CreatedAt string   `json:"created_at,omitempty"`
	UpdatedAt string   `json:"updated_at,omitempty"`
	Input     string   `json:"input,omitempty"`
	UserID    string   `json:"user_id,omitempty"`
	AgentID   string   `json:"agent_id,omitempty"`
	TeamID    string   `json:"team_id,omitempty"`
	Feedback  string   `json:"feedback,omitempty"`
}

// Dicts encodes memories as Agno's MemoryUpdateCompleted event lists them.
func Dicts(ms []db.Memory) json.RawMessage {
	out := make([]memoryDict, len(ms))
	for i, m := range ms {
		out[i] = memoryDict{MemoryID: m.MemoryID, Memory: m.Memory, Topics: m.Topics, Input: m.Input,
			UserID: m.UserID, AgentID: m.AgentID, TeamID: m.TeamID, Feedback: m.Feedback}
		if m.CreatedAt > 0 {
			out[i].CreatedAt = isoTime(time.Unix(m.CreatedAt, 0))
		}
		if m.UpdatedAt > 0 {
			out[i].UpdatedAt = isoTime(time.Unix(m.UpdatedAt, 0))
		}
	}
	b, _ := json.Marshal(out)
	return b
}
