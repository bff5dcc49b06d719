package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
)

// loadSession reads the session row and derives the session state: the
// stored state (or Config.SessionState for a new session) with the call's
// WithSessionState merged over it. When the run adds history, the history
// runs come with the session (one statement where the driver can); rows are
// nil otherwise. A session id generated for this run cannot be stored yet,
// so it is not read.
func (st *state) loadSession() (rows []db.HistoryRef, err error) {
	base := st.a.conf().SessionState
	if d := st.a.conf().DB; d != nil && !st.opts.newSession {
		var (
			s, cs   *db.Session
			claimed bool
		)
		q, withHistory := st.historyQuery()
		if !withHistory {
			cs, claimed = db.ClaimedSession(st.ctx, st.out.RunID, st.out.SessionID)
		}
		if st.out.ParentRunID == "" && !st.joined {
			// Before the read: see sessionlines.go. A member or step run
			// leaves the session row to its team or workflow.
			claimed = st.joinLine(claimed)
		}
		if withHistory {
			s, rows, err = d.SessionHistoryRefs(st.ctx, q)
		} else if claimed {
			s = cs // read by the durable queue's claim of this run
		} else {
			s, err = d.GetSession(st.ctx, st.out.SessionID)
		}
		switch {
		case errors.Is(err, db.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("%w: load session %s: %w", ErrStorage, st.out.SessionID, err)
		default:
			st.session = s
			base = st.storedState(s)
		}
		st.sessionRead = true
	}
	if over := st.opts.get().sessionState; len(base) > 0 || len(over) > 0 {
		state := make(map[string]any, len(base)+len(over))
		maps.Copy(state, base)
		maps.Copy(state, over)
		st.extras().sessionState = state
	}
	return rows, nil
}

// addsHistory reports whether the run adds its session's history to the
// context: WithAddHistoryToContext, else Config.AddHistoryToContext.
func (st *state) addsHistory() bool {
	if st.opts.more != nil && st.opts.more.addHistory != nil {
		return *st.opts.more.addHistory
	}
	return st.a.conf().AddHistoryToContext
}

// historyQuery is the history this run adds to its context; ok is false
// when it adds none.
func (st *state) historyQuery() (q db.HistoryQuery, ok bool) {
	if st.a.conf().DB == nil || !st.addsHistory() {
		return q, false
	}
	// The run only reads its session (st.session) and the history refs: an
	// in-process store may hand over its stored values.
	q = db.HistoryQuery{SessionID: st.out.SessionID, Limit: st.a.conf().NumHistoryRuns, ReadOnlySession: true}
	q.ProducedBy(st.p.comp)
	q.MemberRuns = st.opts.more != nil && st.opts.more.memberHistory
	if !st.a.conf().DB.InProcess() {
		// An in-process store shares its run_data instead of reading it:
		// naming the cached runs would save nothing there.
		q.Cached = st.p.history.known(st.out.SessionID, q.Limit+1)
	}
	return q, true
}

// loadContext reads the session with its history runs, then the memories.
func (st *state) loadContext() (history, error) {
	rows, err := st.loadSession()
	if err != nil {
		return history{}, err
	}
	if err := st.loadMemories(); err != nil {
		return history{}, err
	}
	return st.loadHistory(rows), nil
}

// history is the context messages of earlier runs, one slice per run as the
// history cache shares them; model requests share them too (model.History),
// never copying them.
type history struct {
	runs [][]model.Message
	n    int // messages in all runs
	// segs is runs with one slot before them (the same array), where a
	// request's leading own messages (the system message) go: see
	// conversation. Nil when loadHistory did not build runs.
	segs [][]model.Message
	// media reports whether some run's messages hold media references that
	// rehydrateHistory reads back; without any it walks none of them.
	media bool
}

// rehydrateHistory puts media bytes back into the history's messages (see
// rehydrate); a run's slice is replaced, never changed in place.
func (st *state) rehydrateHistory(h history) error {
	if !h.media {
		return nil
	}
	for i, msgs := range h.runs {
		out, err := st.rehydrate(msgs)
		if err != nil {
			return err
		}
		h.runs[i] = out
	}
	return nil
}

// historyEnvelope decodes only the messages of a stored run.
type historyEnvelope struct {
	Messages []model.Message `json:"messages"`
}

// loadHistory returns the messages of the history runs loadSession read
// (the last NumHistoryRuns context runs of the agent's component, its own
// runs or a team's when it leads one, so that other agents' runs in a shared
// session never take the places of its own), marked from_history; system
// messages are left out.
func (st *state) loadHistory(rows []db.HistoryRef) history {
	if st.session == nil {
		return history{}
	}
	segs := make([][]model.Message, 1, len(rows)+1)
	h := history{runs: segs[1:1]}
	cached, media := st.p.history.getAll(rows, h.runs[:len(rows)])
	for i := range rows {
		if rows[i].RunID == st.out.RunID {
			continue
		}
		own := cached[i]
		if own == nil {
			var ok bool
			if own, ok = st.decodeHistory(&rows[i]); !ok {
				continue // a corrupt stored run must not break new runs
			}
			media = media || slices.ContainsFunc(own, needsMedia)
		}
		h.runs = append(h.runs, own) // at or before i: cached[i] is read first
		h.n += len(own)
	}
	h.segs, h.media = segs[:1+len(h.runs)], media
	return h
}

// decodeHistory decodes a history run's context messages and caches them.
// A run the database returned without run_data (the cache held it) but
// whose entry is gone since is read again by id.
func (st *state) decodeHistory(r *db.HistoryRef) ([]model.Message, bool) {
	if r.RunData == nil {
		full, err := st.a.conf().DB.GetRun(st.ctx, r.RunID)
		if err != nil {
			return nil, false
		}
		r = &db.HistoryRef{RunID: full.RunID, UpdatedAt: full.UpdatedAt, RunData: full.RunData}
	}
	var env historyEnvelope
	if json.Unmarshal(r.RunData, &env) != nil {
		return nil, false
	}
	own := contextMessages(env.Messages)
	st.p.history.put(st.out.SessionID, r, own)
	return own, true
}

// system returns the system message text for this run.
func (st *state) system() string {
	s := st.p.system
	if st.offloader() != nil && st.a.off == nil {
		s = strings.TrimSpace(s + "\n\n" + offload.SystemPrompt)
	}
	if info := st.a.contextInfo(time.Now); info != "" {
		if s != "" {
			s += "\n\n"
		}
		s += info
	}
	if st.a.mem != nil {
		if mem := st.memoryContext(); mem != "" {
			if s != "" {
				s += "\n\n"
			}
			s += mem
		}
	}
	return s
}

// buildMessages lays out the run's own messages (system and the user's
// input) and puts the history between them (see conversation).
func (st *state) buildMessages(history history, in *run.Input) {
	now := st.start.Unix()
	// System, user and the answer: most turns of an agent with tools call
	// none, and a turn that does grows the list once, to its size (see
	// loop). A message is 240 bytes.
	msgs := make([]model.Message, 0, 3)
	if sys := st.system(); sys != "" {
		msgs = append(msgs, model.Message{Role: model.RoleSystem, Content: sys, CreatedAt: now})
	}
	st.setHistory(history, len(msgs))
	user := model.Message{Role: model.RoleUser, Content: in.Text(), CreatedAt: now}
	user.Parts = appendParts(user.Parts, model.PartImage, in.Images)
	user.Parts = appendParts(user.Parts, model.PartAudio, in.Audio)
	user.Parts = appendParts(user.Parts, model.PartVideo, in.Videos)
	user.Parts = appendParts(user.Parts, model.PartFile, in.Files)
	st.msgs = append(msgs, user)
}

// setHistory makes h the run's history, read before the own message at
// msgs[at] (after the system message).
func (st *state) setHistory(h history, at int) {
	st.history, st.nHistory, st.histAt, st.segs = h.runs, int32(h.n), int32(at), h.segs
}

// conversation returns what a model reads, msgs (the run's own messages)
// with the history runs before msgs[at], as a request's shared History and
// its Messages. The history runs are the history cache's slices, not
// copies: nobody may write to them. fix, when not nil, rewrites each part
// (it returns its argument, or a changed copy: copy on write).
func (st *state) conversation(msgs []model.Message, at int, fix func([]model.Message) ([]model.Message, error)) (model.History, []model.Message, error) {
	if fix == nil {
		fix = func(m []model.Message) ([]model.Message, error) { return m, nil }
	}
	if st.nHistory == 0 {
		own, err := fix(msgs)
		return model.History{}, own, err
	}
	at = min(at, len(msgs))
	if segs, ok := st.sharedSegments(msgs[:at:at], fix); ok {
		own, err := fix(msgs[at:])
		return model.NewHistory(segs...), own, err
	}
	segs := make([][]model.Message, 0, len(st.history)+1)
	if at > 0 {
		head, err := fix(msgs[:at:at])
		if err != nil {
			return model.History{}, nil, err
		}
		segs = append(segs, head)
	}
	for _, run := range st.history {
		run, err := fix(run)
		if err != nil {
			return model.History{}, nil, err
		}
		segs = append(segs, run)
	}
	own, err := fix(msgs[at:])
	return model.NewHistory(segs...), own, err
}

// sharedSegments returns the run's history segments after head, in the
// array loadHistory built them in (head in the slot before them), when fix
// rewrites neither: every model call of the run then shares one array
// instead of building one per call. Its slot 0 is head each time: the same
// messages (the run's leading own messages do not change between calls).
func (st *state) sharedSegments(head []model.Message, fix func([]model.Message) ([]model.Message, error)) ([][]model.Message, bool) {
	if st.segs == nil || len(st.segs) != len(st.history)+1 {
		return nil, false
	}
	same := func(a, b []model.Message) bool {
		return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
	}
	if h, err := fix(head); err != nil || !same(h, head) {
		return nil, false
	}
	for _, run := range st.history {
		if r, err := fix(run); err != nil || !same(r, run) {
			return nil, false
		}
	}
	if len(head) == 0 {
		return st.segs[1:], true
	}
	st.segs[0] = head
	return st.segs, true
}

func appendParts(parts []model.Part, t model.PartType, media []run.Media) []model.Part {
	for _, m := range media {
		name := m.Name
		if name == "" {
			name = m.Filepath
		}
		parts = append(parts, model.Part{Type: t, URL: m.URL, Data: m.Content, MIMEType: m.MIMEType, Name: name})
	}
	return parts
}
