package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentryhq/agentry/db"
)

// The component registry: agno_components, agno_component_configs and
// agno_component_links in Agno 3.0's shape. Writes run in one transaction
// that first locks the component's row (FOR UPDATE; SQLite's single writer
// serializes them anyway), so version numbers, the current pointer and the
// link guards cannot be raced.

const (
	compCols = "component_id, component_type, name, user_id, description, current_version, metadata, created_at, updated_at, deleted_at"
	cfgCols  = "component_id, version, label, stage, config, notes, created_at, updated_at"
	linkCols = "parent_component_id, parent_version, link_kind, link_key, child_component_id, child_version, position, meta, created_at, updated_at"
)

var _ db.ComponentDriver = (*Store)(nil)

func (s *Store) components() string  { return s.d.Table(s.t.Components) }
func (s *Store) compConfigs() string { return s.d.Table(s.t.ComponentConfigs) }
func (s *Store) compLinks() string   { return s.d.Table(s.t.ComponentLinks) }

// forUpdate locks the rows a SELECT reads, where the dialect can.
func (s *Store) forUpdate() string {
	if s.d.Name == "sqlite" {
		return ""
	}
	return " FOR UPDATE"
}

// visible adds Agno's catalog visibility for a scoped caller: its own rows,
// shared (unowned) rows and live published rows.
func (s *Store) visible(ctx context.Context, w *where) {
	if u, ok := db.UserScope(ctx); ok {
		w.add("("+s.d.EqExact("user_id")+" OR user_id IS NULL OR (current_version IS NOT NULL AND deleted_at IS NULL))", u)
	}
}

// compTx runs fn in a write transaction.
func (s *Store) compTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	tx, err := s.w.BeginTx(ctx, s.d.TxOptions)
	if err != nil {
		return s.fail(op, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		if errors.Is(err, db.ErrInvalidRecord) || errors.Is(err, db.ErrConflict) || errors.Is(err, db.ErrExists) || errors.Is(err, db.ErrCorruptRow) {
			return err
		}
		return s.fail(op, err)
	}
	return s.fail(op, tx.Commit())
}

// lockComponent reads and locks a component the context may write (a
// scoped caller: its own only).
func (s *Store) lockComponent(ctx context.Context, tx *sql.Tx, id string) (*db.Component, error) {
	w := &where{}
	w.add("component_id = ?", id)
	s.scope(ctx, w)
	c, err := scanComponent(tx.QueryRowContext(ctx, s.d.Bind("SELECT "+compCols+" FROM "+s.components()+w.String()+s.forUpdate()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: component %s", db.ErrNotFound, id)
	}
	return c, err
}

// lockLive is lockComponent for a write that needs a live component.
func (s *Store) lockLive(ctx context.Context, tx *sql.Tx, id string) (*db.Component, error) {
	c, err := s.lockComponent(ctx, tx, id)
	if err == nil && c.DeletedAt != 0 {
		return nil, fmt.Errorf("%w: component %s", db.ErrComponentArchived, id)
	}
	return c, err
}

func (s *Store) CreateComponent(ctx context.Context, c *db.Component, cfg *db.ComponentConfig, links []db.ComponentLink) error {
	return s.compTx(ctx, "create component "+c.ComponentID, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, s.d.Bind("SELECT 1 FROM "+s.components()+" WHERE component_id = ?"), c.ComponentID).Scan(&one)
		if err == nil {
			// Generic: must not confirm that another user's component exists.
			return fmt.Errorf("%w: component id %s is not available", db.ErrExists, c.ComponentID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := s.checkLinks(ctx, tx, c.ComponentID, links, cfg.Stage == db.StagePublished); err != nil {
			return err
		}
		var cur any
		if c.CurrentVersion > 0 {
			cur = c.CurrentVersion
		}
		if _, err := tx.ExecContext(ctx, s.d.Bind("INSERT INTO "+s.components()+" ("+compCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
			c.ComponentID, c.ComponentType, nullStr(c.Name), nullStr(c.UserID), nullStr(c.Description), cur, s.jsonArg(c.Metadata),
			c.CreatedAt, nil, nil); err != nil {
			return err
		}
		if err := s.insertConfig(ctx, tx, cfg); err != nil {
			return err
		}
		return s.insertLinks(ctx, tx, c.ComponentID, 1, links, c.CreatedAt)
	})
}

func (s *Store) insertConfig(ctx context.Context, tx *sql.Tx, cfg *db.ComponentConfig) error {
	var upd any
	if cfg.UpdatedAt != 0 {
		upd = cfg.UpdatedAt
	}
	_, err := tx.ExecContext(ctx, s.d.Bind("INSERT INTO "+s.compConfigs()+" ("+cfgCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
		cfg.ComponentID, cfg.Version, nullStr(cfg.Label), cfg.Stage, string(cfg.Config), nullStr(cfg.Notes), cfg.CreatedAt, upd)
	return err
}

func (s *Store) insertLinks(ctx context.Context, tx *sql.Tx, parent string, version int, links []db.ComponentLink, at int64) error {
	for _, l := range links {
		if _, err := tx.ExecContext(ctx, s.d.Bind("INSERT INTO "+s.compLinks()+" ("+linkCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
			parent, version, l.LinkKind, l.LinkKey, l.ChildComponentID, l.ChildVersion, l.Position, s.jsonArg(l.Meta), at, nil); err != nil {
			return err
		}
	}
	return nil
}

// checkLinks refuses links to missing or archived children, to versions
// that do not exist, to unpublished versions from a published parent, and
// links that would let a child reach the parent (a cycle).
func (s *Store) checkLinks(ctx context.Context, tx *sql.Tx, parent string, links []db.ComponentLink, published bool) error {
	for _, l := range links {
		var deleted looseNull
		err := tx.QueryRowContext(ctx, s.d.Bind("SELECT deleted_at FROM "+s.components()+" WHERE component_id = ?"+s.forUpdate()), l.ChildComponentID).Scan(&deleted)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: the link %s names component %s, which does not exist", db.ErrInvalidRecord, l.LinkKey, l.ChildComponentID)
		}
		if err != nil {
			return err
		}
		if deleted.Valid {
			return fmt.Errorf("%w: cannot link %s to %s", db.ErrComponentArchived, parent, l.ChildComponentID)
		}
		var stage string
		err = tx.QueryRowContext(ctx, s.d.Bind("SELECT stage FROM "+s.compConfigs()+" WHERE component_id = ? AND version = ?"), l.ChildComponentID, l.ChildVersion).Scan(&stage)
		if errors.Is(err, sql.ErrNoRows) || stage == db.StageDeleted {
			return fmt.Errorf("%w: the link %s names %s v%d, which does not exist", db.ErrInvalidRecord, l.LinkKey, l.ChildComponentID, l.ChildVersion)
		}
		if err != nil {
			return err
		}
		if published && stage != db.StagePublished && slices.Contains(db.PinLinkKinds, l.LinkKind) {
			return fmt.Errorf("%w: cannot publish %s: it pins %s v%d, a draft; publish the child first", db.ErrConflict, parent, l.ChildComponentID, l.ChildVersion)
		}
	}
	// The new edges close a cycle when a child reaches the parent through
	// the links already stored (any version, as Agno checks).
	seen := map[string]bool{}
	frontier := make([]string, 0, len(links))
	for _, l := range links {
		frontier = append(frontier, l.ChildComponentID)
	}
	for len(frontier) > 0 {
		cur := frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		if seen[cur] {
			continue
		}
		seen[cur] = true
		rows, err := tx.QueryContext(ctx, s.d.Bind("SELECT DISTINCT child_component_id FROM "+s.compLinks()+" WHERE parent_component_id = ?"), cur)
		if err != nil {
			return err
		}
		var next []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return err
			}
			next = append(next, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, n := range next {
			if n == parent {
				return fmt.Errorf("%w: linking %s to %s would make %s reach itself", db.ErrComponentCycle, parent, cur, parent)
			}
			frontier = append(frontier, n)
		}
	}
	return nil
}

func (s *Store) GetComponent(ctx context.Context, id string, includeDeleted bool) (*db.Component, error) {
	w := &where{}
	w.add("component_id = ?", id)
	if !includeDeleted {
		w.add("deleted_at IS NULL")
	}
	s.visible(ctx, w)
	c, err := scanComponent(s.r.QueryRowContext(ctx, s.d.Bind("SELECT "+compCols+" FROM "+s.components()+w.String()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: component %s", db.ErrNotFound, id)
	}
	if err != nil {
		return nil, s.fail("get component "+id, err)
	}
	return c, nil
}

func (s *Store) ListComponents(ctx context.Context, f db.ComponentFilter) ([]db.Component, int, error) {
	w := &where{}
	w.eq("component_type", f.ComponentType)
	w.eq("name", f.Name)
	if !f.IncludeDeleted {
		w.add("deleted_at IS NULL")
	}
	s.visible(ctx, w)
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.components()+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("count components", err)
	}
	q := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY created_at DESC, component_id LIMIT %d OFFSET %d", compCols, s.components(), w.String(), f.Limit, offset(f.Limit, f.Page))
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q), w.args...)
	if err != nil {
		return nil, 0, s.fail("list components", err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.Component{}, scanComponent)
	if err != nil {
		return nil, 0, s.fail("list components", err)
	}
	return out, total, corrupt
}

func (s *Store) UpdateComponent(ctx context.Context, id string, p db.ComponentPatch, at int64) (*db.Component, error) {
	var out *db.Component
	err := s.compTx(ctx, "update component "+id, func(tx *sql.Tx) error {
		c, err := s.lockLive(ctx, tx, id)
		if err != nil {
			return err
		}
		if p.Name != nil {
			c.Name = *p.Name
		}
		if p.Description != nil {
			c.Description = *p.Description
		}
		if p.Metadata != nil {
			c.Metadata = p.Metadata
		}
		c.UpdatedAt = at
		if _, err := tx.ExecContext(ctx, s.d.Bind("UPDATE "+s.components()+" SET name = ?, description = ?, metadata = ?, updated_at = ? WHERE component_id = ?"),
			nullStr(c.Name), nullStr(c.Description), s.jsonArg(c.Metadata), at, id); err != nil {
			return err
		}
		out = c
		return nil
	})
	return out, err
}

// liveParents names the live parents (not archived, parent version not
// deleted) whose links pin child (at version, when not 0). A scoped caller
// counts only parents it owns or shared ones: another user's parent does not
// veto its write, nor learn its id.
func (s *Store) liveParents(ctx context.Context, tx *sql.Tx, child string, version int) ([]string, error) {
	q := "SELECT DISTINCT l.parent_component_id FROM " + s.compLinks() + " l JOIN " + s.components() + " c ON c.component_id = l.parent_component_id JOIN " +
		s.compConfigs() + " pc ON pc.component_id = l.parent_component_id AND pc.version = l.parent_version" +
		" WHERE l.child_component_id = ? AND c.deleted_at IS NULL AND pc.stage <> ?"
	args := []any{child, db.StageDeleted}
	if version != 0 {
		q += " AND l.child_version = ?"
		args = append(args, version)
	}
	if u, ok := db.UserScope(ctx); ok {
		q += " AND (" + s.d.EqExact("c.user_id") + " OR c.user_id IS NULL)"
		args = append(args, u)
	}
	rows, err := tx.QueryContext(ctx, s.d.Bind(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out, rows.Err()
}

func (s *Store) ArchiveComponent(ctx context.Context, id string, at int64) error {
	return s.compTx(ctx, "archive component "+id, func(tx *sql.Tx) error {
		if _, err := s.lockLive(ctx, tx, id); err != nil {
			if errors.Is(err, db.ErrComponentArchived) {
				return fmt.Errorf("%w: component %s", db.ErrNotFound, id)
			}
			return err
		}
		parents, err := s.liveParents(ctx, tx, id, 0)
		if err != nil {
			return err
		}
		if len(parents) > 0 {
			return fmt.Errorf("%w: cannot delete %s: referenced by %s", db.ErrComponentInUse, id, strings.Join(parents, ", "))
		}
		_, err = tx.ExecContext(ctx, s.d.Bind("UPDATE "+s.components()+" SET deleted_at = ?, updated_at = ? WHERE component_id = ?"), at, at, id)
		return err
	})
}

func (s *Store) RestoreComponent(ctx context.Context, id string, at int64) (*db.Component, error) {
	var out *db.Component
	err := s.compTx(ctx, "restore component "+id, func(tx *sql.Tx) error {
		c, err := s.lockComponent(ctx, tx, id)
		if err != nil {
			return err
		}
		if c.DeletedAt == 0 {
			return fmt.Errorf("%w: component %s is not archived", db.ErrConflict, id)
		}
		if c.CurrentVersion > 0 {
			links, err := s.links(ctx, tx, id, c.CurrentVersion)
			if err != nil {
				return err
			}
			for _, l := range links {
				var deleted looseNull
				if err := tx.QueryRowContext(ctx, s.d.Bind("SELECT deleted_at FROM "+s.components()+" WHERE component_id = ?"), l.ChildComponentID).Scan(&deleted); err != nil && !errors.Is(err, sql.ErrNoRows) {
					return err
				}
				if deleted.Valid {
					return fmt.Errorf("%w: cannot restore %s: its child %s is archived; restore it first", db.ErrConflict, id, l.ChildComponentID)
				}
			}
		}
		if _, err := tx.ExecContext(ctx, s.d.Bind("UPDATE "+s.components()+" SET deleted_at = NULL, updated_at = ? WHERE component_id = ?"), at, id); err != nil {
			return err
		}
		c.DeletedAt, c.UpdatedAt = 0, at
		out = c
		return nil
	})
	return out, err
}

func (s *Store) AddConfig(ctx context.Context, id string, cfg *db.ComponentConfig, links []db.ComponentLink) (*db.ComponentConfig, error) {
	var out *db.ComponentConfig
	err := s.compTx(ctx, "add config to "+id, func(tx *sql.Tx) error {
		if _, err := s.lockLive(ctx, tx, id); err != nil {
			return err
		}
		if err := s.checkLabel(ctx, tx, id, cfg.Label, 0); err != nil {
			return err
		}
		if err := s.checkLinks(ctx, tx, id, links, cfg.Stage == db.StagePublished); err != nil {
			return err
		}
		var max int
		if err := tx.QueryRowContext(ctx, s.d.Bind("SELECT COALESCE(MAX(version), 0) FROM "+s.compConfigs()+" WHERE component_id = ?"), id).Scan(&max); err != nil {
			return err
		}
		cp := *cfg
		cp.Version = max + 1
		if err := s.insertConfig(ctx, tx, &cp); err != nil {
			return err
		}
		if err := s.insertLinks(ctx, tx, id, cp.Version, links, cp.CreatedAt); err != nil {
			return err
		}
		if cp.Stage == db.StagePublished {
			if err := s.publish(ctx, tx, id, cp.Version, cp.Config, cp.CreatedAt); err != nil {
				return err
			}
		}
		out = &cp
		return nil
	})
	return out, err
}

// checkLabel refuses a label another live version of the component has.
func (s *Store) checkLabel(ctx context.Context, tx *sql.Tx, id, label string, version int) error {
	if label == "" {
		return nil
	}
	var v int
	err := tx.QueryRowContext(ctx, s.d.Bind("SELECT version FROM "+s.compConfigs()+" WHERE component_id = ? AND label = ? AND stage <> ? AND version <> ?"),
		id, label, db.StageDeleted, version).Scan(&v)
	if err == nil {
		return fmt.Errorf("%w: label %q already names %s v%d", db.ErrConflict, label, id, v)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}

// publish points the component at version and copies the config's name
// and description onto the row (Agno's projection of the live version).
func (s *Store) publish(ctx context.Context, tx *sql.Tx, id string, version int, config json.RawMessage, at int64) error {
	var ident struct {
		Name        *string `json:"name"`
		Description *string `json:"description"`
	}
	_ = json.Unmarshal(config, &ident) // a config is a JSON object (checked); other types leave the row alone
	q, args := "UPDATE "+s.components()+" SET current_version = ?, updated_at = ?", []any{version, at}
	if ident.Name != nil && *ident.Name != "" {
		q, args = q+", name = ?", append(args, *ident.Name)
	}
	if ident.Description != nil {
		q, args = q+", description = ?", append(args, nullStr(*ident.Description))
	}
	_, err := tx.ExecContext(ctx, s.d.Bind(q+" WHERE component_id = ?"), append(args, id)...)
	return err
}

func (s *Store) UpdateConfig(ctx context.Context, id string, version int, p db.ConfigPatch, at int64) (*db.ComponentConfig, error) {
	var out *db.ComponentConfig
	err := s.compTx(ctx, "update config of "+id, func(tx *sql.Tx) error {
		if _, err := s.lockLive(ctx, tx, id); err != nil {
			return err
		}
		cur, err := scanConfig(tx.QueryRowContext(ctx, s.d.Bind("SELECT "+cfgCols+" FROM "+s.compConfigs()+" WHERE component_id = ? AND version = ?"), id, version))
		if errors.Is(err, sql.ErrNoRows) || (err == nil && cur.Stage == db.StageDeleted) {
			return fmt.Errorf("%w: config %s v%d", db.ErrNotFound, id, version)
		}
		if err != nil {
			return err
		}
		if cur.Stage == db.StagePublished {
			return fmt.Errorf("%w: %s v%d", db.ErrPublishedConfig, id, version)
		}
		if p.Config != nil {
			cur.Config = p.Config
		}
		if p.Label != nil {
			if err := s.checkLabel(ctx, tx, id, *p.Label, version); err != nil {
				return err
			}
			cur.Label = *p.Label
		}
		if p.Notes != nil {
			cur.Notes = *p.Notes
		}
		if p.Stage != nil {
			cur.Stage = *p.Stage
		}
		cur.UpdatedAt = at
		if p.SetLinks {
			if err := s.checkLinks(ctx, tx, id, p.Links, cur.Stage == db.StagePublished); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.compLinks()+" WHERE parent_component_id = ? AND parent_version = ?"), id, version); err != nil {
				return err
			}
			if err := s.insertLinks(ctx, tx, id, version, p.Links, at); err != nil {
				return err
			}
		} else if cur.Stage == db.StagePublished {
			links, err := s.links(ctx, tx, id, version)
			if err != nil {
				return err
			}
			if err := s.checkLinks(ctx, tx, id, links, true); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, s.d.Bind("UPDATE "+s.compConfigs()+" SET config = ?, label = ?, notes = ?, stage = ?, updated_at = ? WHERE component_id = ? AND version = ?"),
			string(cur.Config), nullStr(cur.Label), nullStr(cur.Notes), cur.Stage, at, id, version); err != nil {
			return err
		}
		if cur.Stage == db.StagePublished {
			if err := s.publish(ctx, tx, id, version, cur.Config, at); err != nil {
				return err
			}
		}
		out = cur
		return nil
	})
	return out, err
}

// readableComponent reads a live component the context may see.
func (s *Store) readableComponent(ctx context.Context, q Querier, id string) (*db.Component, error) {
	w := &where{}
	w.add("component_id = ?", id)
	w.add("deleted_at IS NULL")
	s.visible(ctx, w)
	c, err := scanComponent(q.QueryRowContext(ctx, s.d.Bind("SELECT "+compCols+" FROM "+s.components()+w.String()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: component %s", db.ErrNotFound, id)
	}
	return c, err
}

func (s *Store) GetConfig(ctx context.Context, id string, version int) (*db.ComponentConfig, error) {
	c, err := s.readableComponent(ctx, s.r, id)
	if err != nil {
		return nil, s.fail("get config of "+id, err)
	}
	var row *sql.Row
	switch {
	case version > 0:
		row = s.r.QueryRowContext(ctx, s.d.Bind("SELECT "+cfgCols+" FROM "+s.compConfigs()+" WHERE component_id = ? AND version = ? AND stage <> ?"), id, version, db.StageDeleted)
	case c.CurrentVersion > 0:
		row = s.r.QueryRowContext(ctx, s.d.Bind("SELECT "+cfgCols+" FROM "+s.compConfigs()+" WHERE component_id = ? AND version = ? AND stage <> ?"), id, c.CurrentVersion, db.StageDeleted)
	default:
		row = s.r.QueryRowContext(ctx, s.d.Bind("SELECT "+cfgCols+" FROM "+s.compConfigs()+" WHERE component_id = ? AND stage <> ? ORDER BY version DESC LIMIT 1"), id, db.StageDeleted)
	}
	cfg, err := scanConfig(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: config %s v%d", db.ErrNotFound, id, version)
	}
	if err != nil {
		return nil, s.fail("get config of "+id, err)
	}
	return cfg, nil
}

func (s *Store) ListConfigs(ctx context.Context, id string) ([]db.ComponentConfig, error) {
	if _, err := s.readableComponent(ctx, s.r, id); err != nil {
		return nil, s.fail("list configs of "+id, err)
	}
	rows, err := s.r.QueryContext(ctx, s.d.Bind("SELECT "+cfgCols+" FROM "+s.compConfigs()+" WHERE component_id = ? AND stage <> ? ORDER BY version DESC"), id, db.StageDeleted)
	if err != nil {
		return nil, s.fail("list configs of "+id, err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.ComponentConfig{}, scanConfig)
	if err != nil {
		return nil, s.fail("list configs of "+id, err)
	}
	return out, corrupt
}

func (s *Store) DeleteConfig(ctx context.Context, id string, version int, at int64) error {
	return s.compTx(ctx, "delete config of "+id, func(tx *sql.Tx) error {
		c, err := s.lockLive(ctx, tx, id)
		if err != nil {
			return err
		}
		var stage string
		err = tx.QueryRowContext(ctx, s.d.Bind("SELECT stage FROM "+s.compConfigs()+" WHERE component_id = ? AND version = ?"), id, version).Scan(&stage)
		if errors.Is(err, sql.ErrNoRows) || stage == db.StageDeleted {
			return fmt.Errorf("%w: config %s v%d", db.ErrNotFound, id, version)
		}
		if err != nil {
			return err
		}
		if stage == db.StagePublished {
			return fmt.Errorf("%w: cannot delete %s v%d", db.ErrPublishedConfig, id, version)
		}
		if c.CurrentVersion == version {
			return fmt.Errorf("%w: cannot delete the current config %s v%d", db.ErrInvalidRecord, id, version)
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.compConfigs()+" WHERE component_id = ? AND stage <> ?"), id, db.StageDeleted).Scan(&n); err != nil {
			return err
		}
		if n <= 1 {
			return fmt.Errorf("%w: %s", db.ErrLastConfig, id)
		}
		parents, err := s.liveParents(ctx, tx, id, version)
		if err != nil {
			return err
		}
		if len(parents) > 0 {
			return fmt.Errorf("%w: cannot delete %s v%d: pinned by %s", db.ErrComponentInUse, id, version, strings.Join(parents, ", "))
		}
		if _, err := tx.ExecContext(ctx, s.d.Bind("UPDATE "+s.compConfigs()+" SET stage = ?, label = NULL, updated_at = ? WHERE component_id = ? AND version = ?"),
			db.StageDeleted, at, id, version); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.compLinks()+" WHERE parent_component_id = ? AND parent_version = ?"), id, version)
		return err
	})
}

func (s *Store) SetCurrentVersion(ctx context.Context, id string, version int, at int64) (*db.Component, error) {
	var out *db.Component
	err := s.compTx(ctx, "set current version of "+id, func(tx *sql.Tx) error {
		c, err := s.lockLive(ctx, tx, id)
		if err != nil {
			return err
		}
		cfg, err := scanConfig(tx.QueryRowContext(ctx, s.d.Bind("SELECT "+cfgCols+" FROM "+s.compConfigs()+" WHERE component_id = ? AND version = ?"), id, version))
		if errors.Is(err, sql.ErrNoRows) || (err == nil && cfg.Stage == db.StageDeleted) {
			return fmt.Errorf("%w: config %s v%d", db.ErrNotFound, id, version)
		}
		if err != nil {
			return err
		}
		if cfg.Stage != db.StagePublished {
			return fmt.Errorf("%w: %s v%d is a draft", db.ErrDraftConfig, id, version)
		}
		links, err := s.links(ctx, tx, id, version)
		if err != nil {
			return err
		}
		for _, l := range links {
			var deleted looseNull
			if err := tx.QueryRowContext(ctx, s.d.Bind("SELECT deleted_at FROM "+s.components()+" WHERE component_id = ?"), l.ChildComponentID).Scan(&deleted); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if deleted.Valid {
				return fmt.Errorf("%w: cannot make %s v%d current: its child %s is archived", db.ErrConflict, id, version, l.ChildComponentID)
			}
		}
		if err := s.publish(ctx, tx, id, version, cfg.Config, at); err != nil {
			return err
		}
		out, err = s.lockComponent(ctx, tx, id)
		_ = c
		return err
	})
	return out, err
}

// linkKey names a link row in errors.
func linkKey(id string, version int, kind, key string) string {
	return fmt.Sprintf("%s v%d %s %s", id, version, kind, key)
}

func (s *Store) links(ctx context.Context, q Querier, id string, version int) ([]db.ComponentLink, error) {
	rows, err := q.QueryContext(ctx, s.d.Bind("SELECT "+linkCols+" FROM "+s.compLinks()+" WHERE parent_component_id = ? AND parent_version = ? ORDER BY position, link_kind, link_key"), id, version)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// A link that does not decode is reported (joined *db.CorruptRowError)
	// next to the others: a write checking the links fails on it, a list
	// serves the rest.
	out, corrupt, err := decodeRows(rows, []db.ComponentLink{}, func(sc scanner) (*db.ComponentLink, error) {
		var (
			l        db.ComponentLink
			childVer looseNull
			meta     []byte
			cr, up   looseNull
		)
		if err := sc.Scan(&l.ParentComponentID, &l.ParentVersion, &l.LinkKind, &l.LinkKey, &l.ChildComponentID, &childVer, &l.Position, &meta, &cr, &up); err != nil {
			return nil, undecodable("component_links", linkKey(id, version, l.LinkKind, l.LinkKey), err)
		}
		l.ChildVersion, l.CreatedAt, l.UpdatedAt = int(childVer.Int64), cr.Int64, up.Int64
		var err error
		if l.Meta, err = decodeJSON(meta); err != nil {
			return nil, &db.CorruptRowError{Table: "component_links", ID: linkKey(id, version, l.LinkKind, l.LinkKey), Err: fmt.Errorf("meta: %w", err)}
		}
		return &l, nil
	})
	if err != nil {
		return nil, err
	}
	return out, corrupt
}

func (s *Store) ListLinks(ctx context.Context, id string, version int) ([]db.ComponentLink, error) {
	if _, err := s.readableComponent(ctx, s.r, id); err != nil {
		return nil, s.fail("list links of "+id, err)
	}
	out, err := s.links(ctx, s.r, id, version)
	if err != nil && !errors.Is(err, db.ErrCorruptRow) {
		return nil, s.fail("list links of "+id, err)
	}
	return out, err
}

func scanComponent(sc scanner) (*db.Component, error) {
	var (
		c                       db.Component
		name, user, description sql.NullString
		current                 looseNull
		meta                    []byte
		updated, deleted        looseNull
	)
	if err := sc.Scan(&c.ComponentID, &c.ComponentType, &name, &user, &description, &current, &meta, intCol{&c.CreatedAt}, &updated, &deleted); err != nil {
		return nil, undecodable("components", c.ComponentID, err)
	}
	var err error
	if c.Metadata, err = decodeJSON(meta); err != nil {
		return nil, &db.CorruptRowError{Table: "components", ID: c.ComponentID, Err: fmt.Errorf("metadata: %w", err)}
	}
	c.Name, c.UserID, c.Description = name.String, user.String, description.String
	c.CurrentVersion, c.UpdatedAt, c.DeletedAt = int(current.Int64), updated.Int64, deleted.Int64
	return &c, nil
}

// errConfigNotObject reports a stored config that is no JSON object.
var errConfigNotObject = errors.New("config is not a JSON object")

// configKey names a config row (component_id, version) in errors; empty
// when the row never arrived.
func configKey(id string, version int) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf("%s v%d", id, version)
}

func scanConfig(sc scanner) (*db.ComponentConfig, error) {
	var (
		c            db.ComponentConfig
		label, notes sql.NullString
		config       []byte
		updated      looseNull
	)
	if err := sc.Scan(&c.ComponentID, &c.Version, &label, &c.Stage, &config, &notes, intCol{&c.CreatedAt}, &updated); err != nil {
		return nil, undecodable("component_configs", configKey(c.ComponentID, c.Version), err)
	}
	var err error
	if c.Config, err = decodeJSON(config); err != nil || len(c.Config) == 0 || c.Config[0] != '{' {
		return nil, &db.CorruptRowError{Table: "component_configs", ID: configKey(c.ComponentID, c.Version), Err: errConfigNotObject}
	}
	c.Label, c.Notes, c.UpdatedAt = label.String, notes.String, updated.Int64
	return &c, nil
}
