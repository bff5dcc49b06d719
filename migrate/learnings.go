package migrate

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/text/cases"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Entity memory re-key (the learnings table's 3.0.0 step).
//
// Before Agno 3.0, an entity memory stored under namespace "user" had the key
// entity_user_{type}_{id}: two users recording the same entity shared one row,
// and one user's facts replaced the other's. 3.0 keys it
// entity_user_{sha256(user_id)[:16]}_{type}_{id} (db.EntityLearningID), and
// the store does not re-key old rows itself: until this step runs, an entity
// written before the upgrade is split across two rows. The step moves every
// legacy row onto its owner's key, one transaction per row, so a crash at any
// point leaves each row either moved or not (never both, never neither), and
// running Up again resumes.
//
// Rows are sorted into the buckets Agno 3.0's migration reports
// (agno.learn.migrations.rekey_user_entity_learnings), with the same names:
//   - keyed: already on a per-user key; counted, not listed.
//   - rekeyed: moved onto its owner's key (timestamps kept).
//   - merged: the owner's key already held a row (written after the upgrade);
//     the legacy row is folded into it, the newer row winning every conflict.
//   - contaminated: the content's recorded user differs from the owner column,
//     so two users wrote the row and their data is not separable. It moves to
//     namespace "quarantined_user" (listed under quarantined too), which no
//     store reads, keeping its content for the operator; with
//     Config.PurgeUnrecoverableLearnings it is deleted (purged) instead.
//   - contaminated_keyed: the same disagreement on a per-user key; reported only.
//   - unowned: no user_id, so no user's erasure reaches it; reported, or purged.
//   - malformed: no entity identity, or content that is not a JSON object.
//   - conflicts: the owner's key holds content that is not a JSON object.
//   - failed: an error while moving the row; it is left in place.
//
// The step is not reversed by Down: rows stay on their per-user keys.

// LearningsRekey reports what the entity memory re-key did (or, in a dry
// run, would do) to one learnings table. Every scanned row is counted once
// across Keyed and the lists Rekeyed, Merged, Contaminated,
// ContaminatedKeyed, Unowned, Malformed, Conflicts and Failed; Quarantined
// and Purged repeat ids listed under Contaminated or Unowned.
type LearningsRekey struct {
	Table             string   `json:"table"`
	DryRun            bool     `json:"dry_run"`
	Scanned           int      `json:"scanned"`
	Keyed             int      `json:"keyed"`
	Rekeyed           []string `json:"rekeyed"`
	Merged            []string `json:"merged"`
	Quarantined       []string `json:"quarantined"`
	Contaminated      []string `json:"contaminated"`
	ContaminatedKeyed []string `json:"contaminated_keyed"`
	Unowned           []string `json:"unowned"`
	Malformed         []string `json:"malformed"`
	Conflicts         []string `json:"conflicts"`
	Failed            []string `json:"failed"`
	Purged            []string `json:"purged"`
}

// Changed reports whether the re-key moved, merged, quarantined or purged a row.
func (r *LearningsRekey) Changed() bool {
	return r != nil && !r.DryRun && len(r.Rekeyed)+len(r.Merged)+len(r.Quarantined)+len(r.Purged) > 0
}

const (
	entityType          = db.EntityLearningType
	quarantineNamespace = "quarantined_user"
	learningColumns     = "learning_id, learning_type, namespace, user_id, agent_id, team_id, workflow_id, session_id, entity_id, entity_type, content, metadata, created_at, updated_at"
)

// errRowChanged: a row's stored state no longer matches the bucket it was
// listed in (another writer changed it during the step).
var errRowChanged = errors.New("changed during the migration")

// rekeyLearnings is the learnings table's 3.0.0 step.
func (m *Manager) rekeyLearnings(ctx context.Context, st TableStatus, sum *Summary) ([]string, error) {
	rep, err := m.RekeyLearnings(ctx, st.Table)
	sum.Learnings = rep
	if err != nil {
		return nil, err
	}
	verb := "re-keyed"
	if rep.DryRun {
		verb = "would re-key"
	}
	actions := []string{fmt.Sprintf("entity memory (namespace user): %s %d, merged %d, quarantined %d, purged %d of %d scanned",
		verb, len(rep.Rekeyed), len(rep.Merged), len(rep.Quarantined), len(rep.Purged), rep.Scanned)}
	if n := len(rep.ContaminatedKeyed) + len(rep.Unowned) - countPurgedUnowned(rep) + len(rep.Malformed) + len(rep.Conflicts) + len(rep.Failed); n > 0 {
		actions = append(actions, fmt.Sprintf("entity memory: %d rows left in place for an operator (contaminated_keyed %d, unowned %d, malformed %d, conflicts %d, failed %d)",
			n, len(rep.ContaminatedKeyed), len(rep.Unowned), len(rep.Malformed), len(rep.Conflicts), len(rep.Failed)))
	}
	if len(rep.Failed) > 0 && !rep.DryRun {
		// The table is not stamped: the next Up retries the failed rows.
		return actions, fmt.Errorf("entity memory re-key: %d rows failed (%s); they are left in place and the next `migrate up` retries them",
			len(rep.Failed), strings.Join(firstN(rep.Failed, 5), ", "))
	}
	return actions, nil
}

func countPurgedUnowned(r *LearningsRekey) int {
	n := 0
	for _, id := range r.Purged {
		for _, u := range r.Unowned {
			if id == u {
				n++
				break
			}
		}
	}
	return n
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}

// RekeyLearnings re-keys one learnings table's namespace "user" entity
// memory rows (see LearningsRekey). Up runs it as the table's 3.0.0 step; it
// is exported for tools that want the report of a dry run (Config.DryRun)
// without the other steps. Run it with the application stopped: each row
// moves in its own transaction, but a write between the listing and a row's
// move is detected only when it changes the row's bucket.
func (m *Manager) RekeyLearnings(ctx context.Context, table string) (*LearningsRekey, error) {
	rep := &LearningsRekey{Table: table, DryRun: m.cfg.DryRun}
	ids, err := m.legacyCandidateIDs(ctx, table)
	if err != nil {
		return rep, err
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Scanned++
		if err := m.rekeyOne(ctx, table, id, rep); err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return rep, ctxErr
			}
			m.log.Warn("migrate: entity memory re-key left a row in place", "table", table, "learning_id", id, "err", err)
			rep.Failed = append(rep.Failed, id)
		}
	}
	m.log.Info("migrate: entity memory re-key", "table", table, "scanned", rep.Scanned, "keyed", rep.Keyed,
		"rekeyed", len(rep.Rekeyed), "merged", len(rep.Merged), "quarantined", len(rep.Quarantined),
		"contaminated", len(rep.Contaminated), "contaminated_keyed", len(rep.ContaminatedKeyed), "unowned", len(rep.Unowned),
		"malformed", len(rep.Malformed), "conflicts", len(rep.Conflicts), "failed", len(rep.Failed), "purged", len(rep.Purged),
		"dry_run", rep.DryRun)
	return rep, nil
}

// legacyCandidateIDs lists the ids of the namespace "user" entity rows. Only
// ids are held: rows are read again, one at a time, when they are moved, and
// moved rows (whose new ids may sort later) are not visited twice.
func (m *Manager) legacyCandidateIDs(ctx context.Context, table string) ([]string, error) {
	rows, err := m.cfg.DB.QueryContext(ctx, m.q("SELECT learning_id FROM "+m.qualify(table)+
		" WHERE learning_type = ? AND namespace = ? ORDER BY learning_id"), entityType, "user")
	if err != nil {
		return nil, fmt.Errorf("list entity memory rows of %s: %w", table, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// learningRow is one learnings row as the re-key reads it: content and
// metadata are the stored JSON (nil for NULL), columns kept as read.
type learningRow struct {
	id, typ                                                     string
	namespace, user, agent, team, workflow, session, eid, etype sql.NullString
	content, metadata                                           []byte
	createdAt, updatedAt                                        sql.NullInt64
}

func (m *Manager) readLearning(ctx context.Context, q queryer, table, id string) (*learningRow, error) {
	var r learningRow
	err := q.QueryRowContext(ctx, m.q("SELECT "+learningColumns+" FROM "+m.qualify(table)+" WHERE learning_id = ?"), id).
		Scan(&r.id, &r.typ, &r.namespace, &r.user, &r.agent, &r.team, &r.workflow, &r.session, &r.eid, &r.etype,
			&r.content, &r.metadata, &r.createdAt, &r.updatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read learning %s: %w", id, err)
	}
	return &r, nil
}

// rekeyOne classifies one row and, unless dry, moves it in one transaction.
func (m *Manager) rekeyOne(ctx context.Context, table, id string, rep *LearningsRekey) error {
	var tx *sql.Tx
	var q queryer = m.cfg.DB
	if !m.cfg.DryRun {
		var err error
		if tx, err = m.cfg.DB.BeginTx(ctx, m.sd.TxOptions); err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
		q = tx
	}
	row, err := m.readLearning(ctx, q, table, id)
	if err != nil {
		return err
	}
	if row == nil || row.typ != entityType || row.namespace.String != "user" {
		return fmt.Errorf("%w: the row is gone or no longer a namespace user entity memory", errRowChanged)
	}
	bucket, content := classifyLearning(row)
	var list *[]string
	switch bucket {
	case "keyed":
		rep.Keyed++
		return nil
	case "malformed":
		rep.Malformed = append(rep.Malformed, id)
		return nil
	case "contaminated_keyed":
		rep.ContaminatedKeyed = append(rep.ContaminatedKeyed, id)
		return nil
	case "unowned", "contaminated":
		if bucket == "unowned" {
			list = &rep.Unowned
		} else {
			list = &rep.Contaminated
		}
		switch {
		case m.cfg.PurgeUnrecoverableLearnings:
			if !m.cfg.DryRun {
				if err := m.deleteLearning(ctx, tx, table, id); err != nil {
					return err
				}
			}
			rep.Purged = append(rep.Purged, id)
		case bucket == "contaminated":
			if !m.cfg.DryRun {
				qid := db.EntityLearningID(quarantineNamespace, "", row.etype.String, row.eid.String)
				moved := *row
				moved.id, moved.namespace = qid, sql.NullString{String: quarantineNamespace, Valid: true}
				if err := m.upsertLearning(ctx, tx, table, &moved); err != nil {
					return err
				}
				if err := m.deleteLearning(ctx, tx, table, id); err != nil {
					return err
				}
			}
			rep.Quarantined = append(rep.Quarantined, id)
		}
		if !m.cfg.DryRun {
			if err := tx.Commit(); err != nil {
				return err
			}
		}
		*list = append(*list, id)
		return nil
	}

	// bucket == "legacy": move onto the owner's key.
	newID := db.EntityLearningID("user", row.user.String, row.etype.String, row.eid.String)
	target, err := m.readLearning(ctx, q, table, newID)
	if err != nil {
		return err
	}
	if m.cfg.DryRun {
		if target != nil {
			rep.Merged = append(rep.Merged, id)
		} else {
			rep.Rekeyed = append(rep.Rekeyed, id)
		}
		return nil
	}
	moved := *row
	moved.id = newID
	list = &rep.Rekeyed
	if target != nil {
		tc, err := sqlstore.DecodeJSONColumn(target.content)
		if err != nil || !isJSONObject(tc) {
			rep.Conflicts = append(rep.Conflicts, id)
			m.log.Warn("migrate: entity memory re-key: the owner's key holds content that is not a JSON object; legacy row left in place",
				"table", table, "learning_id", id, "target", newID)
			return nil
		}
		merged, err := mergeEntityContent(content, tc)
		if err != nil {
			return err
		}
		moved = *target
		moved.content = merged
		if md, err := sqlstore.DecodeJSONColumn(target.metadata); err != nil || len(md) == 0 {
			moved.metadata = row.metadata
		}
		moved.updatedAt = sql.NullInt64{Int64: time.Now().Unix(), Valid: true}
		list = &rep.Merged
	}
	if err := m.upsertLearning(ctx, tx, table, &moved); err != nil {
		return err
	}
	if err := m.deleteLearning(ctx, tx, table, id); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	*list = append(*list, id)
	return nil
}

// classifyLearning sorts a namespace "user" entity row as Agno 3.0's
// migration does; only "legacy" returns the parsed content.
func classifyLearning(r *learningRow) (bucket string, content json.RawMessage) {
	if r.eid.String == "" || r.etype.String == "" {
		return "malformed", nil
	}
	c, err := sqlstore.DecodeJSONColumn(r.content)
	if err != nil || !isJSONObject(c) {
		return "malformed", nil
	}
	owner := r.user.String
	contentUser, hasUser := jsonUserID(c)
	contaminated := owner != "" && hasUser && contentUser != owner
	if r.id != legacyEntityLearningID(r.etype.String, r.eid.String) {
		if contaminated {
			return "contaminated_keyed", nil
		}
		return "keyed", nil
	}
	switch {
	case owner == "":
		return "unowned", nil
	case contaminated:
		return "contaminated", nil
	}
	return "legacy", c
}

// legacyEntityLearningID is the pre-3.0 key of a namespace "user" entity.
func legacyEntityLearningID(etype, eid string) string {
	return "entity_user_" + etype + "_" + eid
}

// jsonUserID returns content's user_id as the text Agno compares (str() of
// the value); ok is false when it is absent or JSON null.
func jsonUserID(c json.RawMessage) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(c, &obj) != nil {
		return "", false
	}
	v, ok := obj["user_id"]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return "", false
	}
	return pyStr(v), true
}

// pyStr is the text Python's str() gives a decoded JSON scalar: a string
// unquoted, true/false capitalised, a number as written.
func pyStr(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	switch string(v) {
	case "true":
		return "True"
	case "false":
		return "False"
	}
	return string(v)
}

func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

func (m *Manager) upsertLearning(ctx context.Context, tx *sql.Tx, table string, r *learningRow) error {
	cols := strings.Split(learningColumns, ", ")
	set := cols[1:]
	q := m.q(m.sd.UpsertRow(m.qualify(table), cols, []string{"learning_id"}, set))
	_, err := tx.ExecContext(ctx, q, r.id, r.typ, r.namespace, r.user, r.agent, r.team, r.workflow, r.session, r.eid, r.etype,
		jsonText(r.content), jsonText(r.metadata), r.createdAt, r.updatedAt)
	if err != nil {
		return fmt.Errorf("write learning %s: %w", r.id, err)
	}
	return nil
}

// jsonText binds a JSON column value: NULL stays NULL, Agno's double
// encoding is removed, anything else is written as read.
func jsonText(b []byte) any {
	if b == nil {
		return nil
	}
	if d, err := sqlstore.DecodeJSONColumn(b); err == nil {
		if len(d) == 0 {
			return nil
		}
		return string(d)
	}
	return string(b)
}

func (m *Manager) deleteLearning(ctx context.Context, tx *sql.Tx, table, id string) error {
	res, err := tx.ExecContext(ctx, m.q("DELETE FROM "+m.qualify(table)+" WHERE learning_id = ?"), id)
	if err != nil {
		return fmt.Errorf("delete learning %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n != 1 {
		return fmt.Errorf("%w: deleting %s removed %d rows", errRowChanged, id, n)
	}
	return nil
}

// mergeEntityContent folds a legacy row's content into the row already on
// its owner's key, as Agno 3.0 does: the target (newer) wins every
// conflict; the source fills gaps; facts, events and relationships are
// unions with the source's entries first (older first); description falls
// back to the source's; properties merge (target wins); the source's name
// and aliases become aliases unless the target already has them.
func mergeEntityContent(source, target json.RawMessage) (json.RawMessage, error) {
	var src, dst map[string]json.RawMessage
	if err := json.Unmarshal(source, &src); err != nil {
		return nil, fmt.Errorf("source content: %w", err)
	}
	if err := json.Unmarshal(target, &dst); err != nil {
		return nil, fmt.Errorf("target content: %w", err)
	}
	merged := make(map[string]json.RawMessage, len(src)+len(dst))
	for k, v := range src {
		merged[k] = v
	}
	for k, v := range dst {
		merged[k] = v
	}
	for _, field := range []string{"facts", "events", "relationships"} {
		te, err := collection(dst, field)
		if err != nil {
			return nil, err
		}
		se, err := collection(src, field)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, e := range te {
			seen[entryKey(field, e)] = true
		}
		out := make([]json.RawMessage, 0, len(se)+len(te))
		for _, e := range se {
			if !seen[entryKey(field, e)] {
				out = append(out, e)
			}
		}
		out = append(out, te...)
		b, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		merged[field] = b
	}
	if !truthy(merged["description"]) && truthy(src["description"]) {
		merged["description"] = src["description"]
	}
	props := map[string]json.RawMessage{}
	for _, from := range []json.RawMessage{src["properties"], dst["properties"]} {
		if !truthy(from) {
			continue
		}
		var p map[string]json.RawMessage
		if err := json.Unmarshal(from, &p); err != nil {
			return nil, fmt.Errorf("properties is not an object: %w", err)
		}
		for k, v := range p {
			props[k] = v
		}
	}
	b, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	merged["properties"] = b

	aliases, err := collection(dst, "aliases")
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, n := range append([]json.RawMessage{dst["name"]}, aliases...) {
		if truthy(n) {
			names[strings.ToLower(strings.TrimSpace(pyStr(n)))] = true
		}
	}
	srcAliases, err := collection(src, "aliases")
	if err != nil {
		return nil, err
	}
	for _, c := range append([]json.RawMessage{src["name"]}, srcAliases...) {
		if !truthy(c) {
			continue
		}
		n := strings.ToLower(strings.TrimSpace(pyStr(c)))
		if names[n] {
			continue
		}
		names[n] = true
		s, _ := json.Marshal(pyStr(c))
		aliases = append(aliases, s)
	}
	if aliases == nil {
		aliases = []json.RawMessage{}
	}
	if b, err = json.Marshal(aliases); err != nil {
		return nil, err
	}
	merged["aliases"] = b
	return json.Marshal(merged)
}

// collection reads a content list field; absent or null is empty, anything
// but a list is an error (merging it would lose data).
func collection(obj map[string]json.RawMessage, field string) ([]json.RawMessage, error) {
	v, ok := obj[field]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, nil
	}
	var out []json.RawMessage
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, fmt.Errorf("%s is not a list", field)
	}
	return out, nil
}

// foldText folds case and collapses whitespace, as the entity store's fact
// matching does.
var foldText = cases.Fold()

func normalizeFact(s string) string {
	return strings.Join(strings.Fields(foldText.String(s)), " ")
}

// entryKey is the identity the entity store gives a collection entry: facts
// by their normalised text, events by (content, date), relationships by
// (entity_id, entity_type, relation, direction), bare strings by their text.
func entryKey(field string, e json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(e, &obj) != nil {
		return "s\x00" + normalizeFact(pyStr(e))
	}
	switch field {
	case "facts":
		if truthy(obj["content"]) {
			return "s\x00" + normalizeFact(pyStr(obj["content"]))
		}
		return "id\x00" + string(bytes.TrimSpace(obj["id"]))
	case "events":
		return "e\x00" + string(bytes.TrimSpace(obj["content"])) + "\x00" + string(bytes.TrimSpace(obj["date"]))
	}
	return "r\x00" + string(bytes.TrimSpace(obj["entity_id"])) + "\x00" + string(bytes.TrimSpace(obj["entity_type"])) +
		"\x00" + string(bytes.TrimSpace(obj["relation"])) + "\x00" + string(bytes.TrimSpace(obj["direction"]))
}

// truthy is Python truthiness of a decoded JSON value.
func truthy(v json.RawMessage) bool {
	switch t := string(bytes.TrimSpace(v)); t {
	case "", "null", "false", "0", `""`, "[]", "{}":
		return false
	default:
		if len(t) > 1 && (t[0] == '[' || t[0] == '{') {
			var x []any
			if json.Unmarshal(v, &x) == nil && len(x) == 0 {
				return false
			}
			var o map[string]any
			if json.Unmarshal(v, &o) == nil && len(o) == 0 {
				return false
			}
		}
		return true
	}
}
