package offload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentryhq/agentry/agentfs"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/tool"
)

var (
	// ErrNotFound: no such result for the caller (forged or expired ids, and
	// results of other sessions or users, read so). It wraps db.ErrNotFound.
	ErrNotFound = fmt.Errorf("offload: result not found: %w", db.ErrNotFound)
	// ErrNotText: a tool output that is not valid UTF-8 text (binary, or a
	// NUL byte): it is neither stored nor shown to the model.
	ErrNotText = errors.New("offload: tool output is binary or not valid UTF-8")
	// ErrPatternTooLong and ErrBadPattern: search_result's pattern.
	ErrPatternTooLong = fmt.Errorf("offload: search pattern is longer than %d bytes", MaxPatternBytes)
	ErrBadPattern     = errors.New("offload: invalid search pattern")
	// ErrBadRange: read_result's range is out of the result.
	ErrBadRange = errors.New("offload: invalid read range")
)

// Scope is the run a result belongs to or is read from.
type Scope struct {
	SessionID string
	RunID     string
	UserID    string
}

type scopeKey struct{}

// WithScope returns a context whose read_result and search_result calls read
// the scope's results; the agent sets it for every tool call.
func WithScope(ctx context.Context, s Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeFrom returns the scope set by WithScope.
func ScopeFrom(ctx context.Context) (Scope, bool) {
	s, ok := ctx.Value(scopeKey{}).(Scope)
	return s, ok
}

// Call identifies one tool call whose result may be offloaded.
type Call struct {
	Scope
	ToolCallID string
	ToolName   string
	Args       string
}

// Offloader stores oversized tool results. It is safe for concurrent use.
type Offloader struct {
	cfg   Config
	db    *db.DB
	fs    *agentfs.FS
	now   func() time.Time
	tools []tool.Tool
	// searchTime bounds one search's scan (MaxSearchTime).
	searchTime time.Duration
}

// New returns an Offloader storing on d.
func New(d *db.DB, cfg Config) (*Offloader, error) {
	if d == nil {
		return nil, errors.New("offload: a database is required (agent.Config.DB)")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	fs, err := agentfs.New(agentfs.Config{DB: d, Namespace: cfg.Namespace, MaxFileBytes: cfg.MaxFileBytes,
		MaxNamespaceBytes: cfg.MaxNamespaceBytes, MaxNamespaceFiles: cfg.MaxNamespaceFiles})
	if err != nil {
		return nil, fmt.Errorf("offload: %w", err)
	}
	o := &Offloader{cfg: cfg, db: d, fs: fs, now: time.Now, searchTime: MaxSearchTime}
	if o.tools, err = o.buildTools(); err != nil {
		return nil, fmt.Errorf("offload: %w", err)
	}
	return o, nil
}

// Config returns the configuration after defaults.
func (o *Offloader) Config() Config { return o.cfg }

// ResultID is the stable id of a tool call's result: the same session, run
// and tool call always give the same id, and the same result stored again
// (a replayed call) keeps it. A different result under a tool call id the
// run already used (servers that send no ids number the calls of each
// turn: "call_0" again and again) is stored under the next free one of
// the call's further ids, never over the earlier result.
func ResultID(sessionID, runID, toolCallID string) string {
	return resultID(sessionID, runID, toolCallID, 0)
}

// resultID is the call's k-th id; the 0th is ResultID's.
func resultID(sessionID, runID, toolCallID string, k int) string {
	key := sessionID + "\x00" + runID + "\x00" + toolCallID
	if k > 0 {
		key += "\x00" + strconv.Itoa(k)
	}
	h := sha256.Sum256([]byte(key))
	return "res_" + hex.EncodeToString(h[:12])
}

// maxResultIDs bounds the ids one tool call id's results take in a run.
const maxResultIDs = 256

func resultPath(id string) string { return "results/" + id }

// Outcome says what Offload did.
type Outcome struct {
	// Offloaded: the result was over the threshold and Content is an
	// envelope; Stored: the full result is retrievable by ResultID.
	Offloaded, Stored bool
	ResultID          string
	// Content replaces the tool result in messages and the stored run.
	Content string
	// Err is why a result over the threshold was not stored (the envelope
	// then says stored="false"); the run goes on.
	Err error
}

// Offload stores result when it is longer than the threshold and returns
// the envelope that replaces it. Results at or below the threshold come back
// unchanged. A result that is not UTF-8 text is refused (ErrNotText) and
// nothing is stored; a store that refuses (quota, database) gives a
// stored="false" envelope with head and tail, and Outcome.Err says why.
func (o *Offloader) Offload(ctx context.Context, c Call, result string) (Outcome, error) {
	if utf8.RuneCountInString(result) <= o.cfg.ThresholdChars {
		return Outcome{Content: result}, nil
	}
	if !utf8.ValidString(result) || strings.IndexByte(result, 0) >= 0 {
		return Outcome{}, fmt.Errorf("%w: %s returned %d bytes; make the tool return text (base64 or a file path)", ErrNotText, c.ToolName, len(result))
	}
	if c.SessionID == "" || c.ToolCallID == "" {
		return Outcome{}, errors.New("offload: a session id and a tool call id are required")
	}
	lines := countLines(result)
	out := Outcome{Offloaded: true}
	out.ResultID, out.Err = o.store(ctx, c, result, lines)
	out.Stored = out.Err == nil
	if out.Err != nil {
		slog.WarnContext(ctx, "offload: tool result kept as a preview only", "tool", c.ToolName, "result_id", out.ResultID, "err", out.Err)
	}
	out.Content = o.envelope(out.ResultID, c.ToolName, result, lines, out.Stored)
	return out, nil
}

// store writes the file under the call's first free id (ResultID), then
// its index row, and returns the id; on an index failure a file it wrote
// is deleted so that nothing is stored half-way.
func (o *Offloader) store(ctx context.Context, c Call, result string, lines int) (string, error) {
	fsScope := agentfs.Scope{SessionID: c.SessionID, UserID: c.UserID}
	for k := range maxResultIDs {
		id := resultID(c.SessionID, c.RunID, c.ToolCallID, k)
		wrote, err := o.claim(ctx, fsScope, resultPath(id), result)
		if errors.Is(err, errIDTaken) {
			continue
		}
		if err == nil {
			err = o.index(ctx, c, fsScope, id, result, lines)
			if err != nil && wrote {
				_ = o.fs.Delete(context.WithoutCancel(ctx), fsScope, resultPath(id))
			}
		}
		return id, err
	}
	return ResultID(c.SessionID, c.RunID, c.ToolCallID), fmt.Errorf("offload: tool call %s of run %s already has %d stored results", c.ToolCallID, c.RunID, maxResultIDs)
}

// errIDTaken: a result id's file holds another result.
var errIDTaken = errors.New("offload: result id taken")

// claim writes result at p unless a file is there (one statement decides
// between concurrent writers): wrote when it did; not when the file holds
// this very result already (the call stored again); errIDTaken when it
// holds another.
func (o *Offloader) claim(ctx context.Context, s agentfs.Scope, p, result string) (wrote bool, err error) {
	none := int64(0)
	_, err = o.fs.Write(ctx, s, p, []byte(result), agentfs.WriteOptions{IfVersion: &none})
	if !errors.Is(err, agentfs.ErrVersionConflict) {
		return err == nil, err
	}
	info, err := o.fs.Stat(ctx, s, p)
	if errors.Is(err, agentfs.ErrNotFound) || err == nil && info.Size != int64(len(result)) {
		return false, errIDTaken
	}
	if err != nil {
		return false, err
	}
	b, _, err := o.fs.Read(ctx, s, p)
	if errors.Is(err, agentfs.ErrNotFound) || err == nil && string(b) != result {
		return false, errIDTaken
	}
	return false, err
}

// index writes the index row of the result stored at id's path.
func (o *Offloader) index(ctx context.Context, c Call, fsScope agentfs.Scope, id, result string, lines int) error {
	p := resultPath(id)
	ns, err := o.fs.NamespaceOf(fsScope)
	if err != nil {
		return err
	}
	h := sha256.Sum256([]byte(c.Args))
	row := &db.ToolResult{ResultID: id, Namespace: ns, Path: p, SessionID: c.SessionID, RunID: c.RunID, ToolCallID: c.ToolCallID,
		ToolName: c.ToolName, ArgsHash: hex.EncodeToString(h[:]), ContentType: "text/plain; charset=utf-8",
		SizeBytes: int64(len(result)), LineCount: int64(lines), Preview: clipChars(result, o.cfg.PreviewChars), UserID: c.UserID,
		CreatedAt: o.now().Unix()}
	if o.cfg.TTL > 0 {
		row.ExpiresAt = o.now().Add(time.Duration(o.cfg.TTL)).Unix()
	}
	return o.db.UpsertToolResult(ctx, row)
}

// HumanSize formats a byte count as Agno does in envelopes: "812B", "12.3KB",
// "4.0MB".
func HumanSize(n int64) string {
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + "B"
	case n < 1024*1024:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + "KB"
	default:
		return strconv.FormatFloat(float64(n)/(1024*1024), 'f', 1, 64) + "MB"
	}
}

// lookup returns the index row of a result readable by s, or ErrNotFound.
func (o *Offloader) lookup(ctx context.Context, s Scope, id string) (*db.ToolResult, error) {
	if s.SessionID == "" {
		return nil, fmt.Errorf("%w: %s (no session)", ErrNotFound, id)
	}
	if s.UserID != "" {
		ctx = db.WithUserScope(ctx, s.UserID)
	}
	row, err := o.db.GetToolResult(ctx, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	if row.SessionID != s.SessionID || row.UserID != s.UserID || (row.ExpiresAt != 0 && row.ExpiresAt < o.now().Unix()) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return row, nil
}

// Get returns the whole stored text of a result readable by s.
func (o *Offloader) Get(ctx context.Context, s Scope, id string) (string, *db.ToolResult, error) {
	row, err := o.lookup(ctx, s, id)
	if err != nil {
		return "", nil, err
	}
	b, _, err := o.fs.Read(ctx, agentfs.Scope{SessionID: s.SessionID, UserID: s.UserID}, row.Path)
	if errors.Is(err, agentfs.ErrNotFound) {
		return "", nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return "", nil, err
	}
	return string(b), row, nil
}

// List describes a session's stored results, newest first.
func (o *Offloader) List(ctx context.Context, s Scope, limit int) ([]db.ToolResult, error) {
	if s.SessionID == "" {
		return nil, nil
	}
	if s.UserID != "" {
		ctx = db.WithUserScope(ctx, s.UserID)
	}
	rows, err := o.db.ListToolResults(ctx, s.SessionID, limit)
	if err != nil {
		return nil, err
	}
	now := o.now().Unix()
	out := rows[:0]
	for _, r := range rows {
		if r.UserID == s.UserID && (r.ExpiresAt == 0 || r.ExpiresAt >= now) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Sweep deletes up to limit expired results (file and index row) and
// returns how many it deleted. A row it cannot delete is passed over (its
// error returned, joined with the others', once the batch is done), so
// that it cannot hold back the rows that expired after it.
func (o *Offloader) Sweep(ctx context.Context, limit int) (int, error) {
	rows, err := o.db.ExpiredToolResults(ctx, o.now().Unix(), limit)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, r := range rows {
		err := o.db.DeleteFile(ctx, r.Namespace, r.Path)
		if err == nil {
			err = o.db.DeleteToolResult(ctx, r.ResultID)
		}
		if err == nil {
			n++
			continue
		}
		if ctx.Err() != nil || errors.Is(err, db.ErrUnavailable) {
			return n, errors.Join(append(errs, err)...) // the database, not the row
		}
		// One row that cannot be deleted must not stop the rest: rows
		// come oldest first, so it would come first at every sweep.
		if len(errs) < maxSweepErrors {
			errs = append(errs, fmt.Errorf("offload: sweep result %s: %w", r.ResultID, err))
		}
	}
	return n, errors.Join(errs...)
}

// maxSweepErrors is how many row errors one Sweep returns (the rest are
// passed over alike).
const maxSweepErrors = 3

// SweepEvery runs Sweep (batches of up to 500) at an interval until ctx
// ends; errors go to onErr (nil ignores them). An interval that is not
// positive is such an error, and SweepEvery returns (time.NewTicker would
// panic, in the goroutine it is run in: the whole process).
func (o *Offloader) SweepEvery(ctx context.Context, interval time.Duration, onErr func(error)) {
	if interval <= 0 {
		if onErr != nil {
			onErr(fmt.Errorf("offload: sweep interval %v: it must be positive", interval))
		}
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for {
				n, err := o.Sweep(ctx, 500)
				if err != nil && onErr != nil && ctx.Err() == nil {
					onErr(err)
				}
				if err != nil || n < 500 {
					break
				}
			}
		}
	}
}
