package memory

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/model"
	"github.com/google/uuid"
)

// DefaultMaxMemories bounds the memories a manager shows the model (and the
// ones it can update or delete), most recently updated first.
const DefaultMaxMemories = 100

// DefaultManagerPrompt is the memory model's system message when
// Manager.SystemPrompt is empty.
const DefaultManagerPrompt = `You are a memory manager. You maintain a list of short, third-person memories about one user ` +
	`(facts, preferences, plans, relationships) that help personalise future conversations.
Given the user's existing memories and new input, decide what to add, update or delete:
- add a memory for new information worth remembering about the user;
- update a memory (by its id) when the input changes or refines it;
- delete a memory (by its id) that the input shows is wrong or that the user asks to forget;
- change nothing when the input holds nothing worth remembering.
Never store secrets such as passwords or card numbers. Give each memory a few short topics.
Answer with only a JSON object: {"updates": [{"op": "add"|"update"|"delete", "memory_id": "", "memory": "", "topics": []}]}.`

// Manager keeps one user's memories up to date by asking a model what to
// change. It is safe for concurrent use.
type Manager struct {
	// DB stores the memories (agno_memories). Required.
	DB *db.DB
	// Model answers with the changes. Required.
	Model model.Model
	// SystemPrompt replaces DefaultManagerPrompt.
	SystemPrompt string
	// MaxMemories bounds the existing memories given to the model; zero
	// means DefaultMaxMemories.
	MaxMemories int
}

// Target names whose memories change and what wrote them.
type Target struct {
	UserID  string
	AgentID string
	TeamID  string
}

// Result is what one update did.
type Result struct {
	Added, Updated, Deleted int
	// Usage is the memory model's token use.
	Usage model.Usage
}

// Changed reports whether anything was written.
func (r *Result) Changed() bool { return r.Added+r.Updated+r.Deleted > 0 }

func (m *Manager) check(t Target) error {
	if m.DB == nil || m.Model == nil {
		return errors.New("memory: Manager needs DB and Model")
	}
	if t.UserID == "" {
		return ErrNoUser
	}
	return nil
}

func (m *Manager) max() int {
	if m.MaxMemories > 0 {
		return m.MaxMemories
	}
	return DefaultMaxMemories
}

// Memories returns up to limit of the user's memories, most recently
// updated first (all of them up to DefaultMaxMemories when limit is zero).
func Memories(ctx context.Context, d *db.DB, userID string, limit int) ([]db.Memory, error) {
	if userID == "" {
		return nil, ErrNoUser
	}
	if limit <= 0 {
		limit = DefaultMaxMemories
	}
	ms, _, err := d.ListMemories(db.WithUserScope(ctx, userID), db.MemoryFilter{UserID: userID, Limit: limit, Page: 1})
	return ms, leaveOutCorrupt(ctx, "memories", err)
}

// leaveOutCorrupt is err unless it only reports stored rows that do not
// decode (db.ErrCorruptRow, joined next to the rows that did: another
// writer's REAL timestamp or broken JSON): those are logged and left out,
// so one such row does not fail the turn that reads the user's memories or
// past sessions.
func leaveOutCorrupt(ctx context.Context, what string, err error) error {
	if err != nil && errors.Is(err, db.ErrCorruptRow) {
		slog.WarnContext(ctx, "memory: unreadable "+what+" left out", "error", err)
		return nil
	}
	return err
}

// Update asks the model which of the user's memories the conversation adds,
// changes or deletes, and applies its answer in one transaction. A
// malformed answer is an error wrapping ErrMalformedUpdates and nothing is
// written. A memory the answer updates or deletes that another run of
// the user deleted meanwhile stays deleted; the rest of the answer is
// applied. Only user messages are given to the model, as Agno does: the
// memories are about the user.
func (m *Manager) Update(ctx context.Context, t Target, conversation []model.Message) (*Result, error) {
	var b strings.Builder
	var said []string
	for _, msg := range conversation {
		if msg.Role != model.RoleUser || msg.FromHistory {
			continue
		}
		if text := strings.TrimSpace(messageText(&msg)); text != "" {
			b.WriteString("- ")
			b.WriteString(text)
			b.WriteString("\n")
			said = append(said, text)
		}
	}
	if b.Len() == 0 {
		return &Result{}, nil
	}
	// The added memories' input is what the user said, as Agno stores it
	// (its messages joined by ", "), not the prompt around it.
	return m.ask(ctx, t, "New messages from the user:\n"+b.String(), strings.Join(said, ", "))
}

// Task applies a task the agent's model phrased ("remember that …",
// "forget …") to the user's memories: the agentic memory tool.
func (m *Manager) Task(ctx context.Context, t Target, task string) (*Result, error) {
	if strings.TrimSpace(task) == "" {
		return nil, errors.New("memory: the task is empty")
	}
	return m.ask(ctx, t, "Task: "+task+"\n", task)
}

// ask has the model answer input and applies its answer; stored is the
// input each added memory records.
func (m *Manager) ask(ctx context.Context, t Target, input, stored string) (*Result, error) {
	if err := m.check(t); err != nil {
		return nil, err
	}
	// The input is stored with each added memory, and Postgres stores no
	// NUL in text: one in the user's words must not fail the update.
	input = strings.ReplaceAll(input, "\x00", "")
	stored = strings.ReplaceAll(stored, "\x00", "")
	existing, err := Memories(ctx, m.DB, t.UserID, m.max())
	if err != nil {
		return nil, fmt.Errorf("memory: read memories of user %s: %w", t.UserID, err)
	}
	known := make(map[string]bool, len(existing))
	for _, e := range existing {
		known[e.MemoryID] = true
	}
	prompt := m.SystemPrompt
	if prompt == "" {
		prompt = DefaultManagerPrompt
	}
	req := &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: prompt},
			{Role: model.RoleUser, Content: existingBlock(existing) + "\n" + input},
		},
		ResponseFormat: updatesFormat,
	}
	resp, err := m.Model.Invoke(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("memory: memory model: %w", err)
	}
	res := &Result{Usage: resp.Usage}
	updates, err := ParseUpdates(resp.Message.Content, known)
	if err != nil {
		return res, err
	}
	ch := db.MemoryChanges{UserID: t.UserID}
	for _, u := range updates {
		switch u.Op {
		case OpAdd:
			ch.Adds = append(ch.Adds, db.Memory{MemoryID: newID(), Memory: u.Memory, Topics: u.Topics,
				Input: truncate(stored, 2000), AgentID: t.AgentID, TeamID: t.TeamID})
		case OpUpdate:
			ch.Updates = append(ch.Updates, db.Memory{MemoryID: u.MemoryID, Memory: u.Memory, Topics: u.Topics})
		case OpDelete:
			ch.Deletes = append(ch.Deletes, u.MemoryID)
		}
	}
	if err := m.apply(db.WithUserScope(ctx, t.UserID), &ch); err != nil {
		return res, fmt.Errorf("memory: apply changes for user %s: %w", t.UserID, err)
	}
	res.Added, res.Updated, res.Deleted = len(ch.Adds), len(ch.Updates), len(ch.Deletes)
	return res, nil
}

// apply writes ch in one transaction. The model answered from the
// memories read before it was asked; another run of the user may have
// deleted some of them since, which fails the batch (db.ErrNotFound). The
// deletion stands: the updates and deletes of memories now gone are left
// out and the rest of the answer applied, rather than losing it all.
func (m *Manager) apply(ctx context.Context, ch *db.MemoryChanges) error {
	for attempt := 1; ; attempt++ {
		err := m.DB.ApplyMemoryChanges(ctx, ch)
		if err == nil || !errors.Is(err, db.ErrNotFound) || attempt == 3 {
			return err
		}
		gone := map[string]bool{}
		for _, id := range slices.Concat(ch.Deletes, memoryIDs(ch.Updates)) {
			switch _, gerr := m.DB.GetMemory(ctx, id); {
			case errors.Is(gerr, db.ErrNotFound):
				gone[id] = true
			case gerr != nil:
				return errors.Join(err, gerr)
			}
		}
		if len(gone) == 0 {
			return err
		}
		ch.Updates = slices.DeleteFunc(ch.Updates, func(u db.Memory) bool { return gone[u.MemoryID] })
		ch.Deletes = slices.DeleteFunc(ch.Deletes, func(id string) bool { return gone[id] })
	}
}

func memoryIDs(ms []db.Memory) []string {
	ids := make([]string, len(ms))
	for i, x := range ms {
		ids[i] = x.MemoryID
	}
	return ids
}

// existingBlock lists the user's memories for the model, with their ids.
func existingBlock(ms []db.Memory) string {
	if len(ms) == 0 {
		return "The user has no memories yet.\n"
	}
	var b strings.Builder
	b.WriteString("Existing memories (id: memory [topics]):\n")
	for _, e := range ms {
		topics, _ := json.Marshal(e.Topics)
		fmt.Fprintf(&b, "- %s: %s %s\n", e.MemoryID, e.Memory, topics)
	}
	return b.String()
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	s, _ = clip.Bytes(s, n)
	return s
}

// newID returns a random (version 4) UUID.
func newID() string {
	var u uuid.UUID
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u.String()
}

// messageText is a message's text: its content and its text parts.
func messageText(msg *model.Message) string {
	if len(msg.Parts) == 0 {
		return msg.Content
	}
	var b strings.Builder
	b.WriteString(msg.Content)
	for _, p := range msg.Parts {
		if p.Type == model.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
