package memory

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/db"
)

// memComponents is the component registry; the maps are made on first
// write and guarded by the driver's lock. Semantics are the SQL drivers'
// (internal/sqlstore/components.go).
type memComponents struct {
	rows    map[string]*db.Component
	configs map[string][]*db.ComponentConfig // by component, version order
	links   map[string]map[int][]db.ComponentLink
}

var _ db.ComponentDriver = (*Driver)(nil)

func cloneComponent(c *db.Component) *db.Component {
	cp := *c
	cp.Metadata = bytes.Clone(c.Metadata)
	return &cp
}

func cloneConfig(c *db.ComponentConfig) *db.ComponentConfig {
	cp := *c
	cp.Config = bytes.Clone(c.Config)
	return &cp
}

// compVisible is Agno's catalog visibility for a scoped caller.
func compVisible(ctx context.Context, c *db.Component) bool {
	u, ok := db.UserScope(ctx)
	return !ok || c.UserID == u || c.UserID == "" || (c.CurrentVersion > 0 && c.DeletedAt == 0)
}

// writable is the strict write scope.
func (d *Driver) writable(ctx context.Context, id string) (*db.Component, error) {
	c, ok := d.comps.rows[id]
	if u, scoped := db.UserScope(ctx); !ok || (scoped && c.UserID != u) {
		return nil, fmt.Errorf("%w: component %s", db.ErrNotFound, id)
	}
	return c, nil
}

func (d *Driver) writableLive(ctx context.Context, id string) (*db.Component, error) {
	c, err := d.writable(ctx, id)
	if err == nil && c.DeletedAt != 0 {
		return nil, fmt.Errorf("%w: component %s", db.ErrComponentArchived, id)
	}
	return c, err
}

func (d *Driver) config(id string, version int) *db.ComponentConfig {
	for _, c := range d.comps.configs[id] {
		if c.Version == version {
			return c
		}
	}
	return nil
}

func (d *Driver) checkCompLinks(parent string, links []db.ComponentLink, published bool) error {
	for _, l := range links {
		child, ok := d.comps.rows[l.ChildComponentID]
		if !ok {
			return fmt.Errorf("%w: the link %s names component %s, which does not exist", db.ErrInvalidRecord, l.LinkKey, l.ChildComponentID)
		}
		if child.DeletedAt != 0 {
			return fmt.Errorf("%w: cannot link %s to %s", db.ErrComponentArchived, parent, l.ChildComponentID)
		}
		cfg := d.config(l.ChildComponentID, l.ChildVersion)
		if cfg == nil || cfg.Stage == db.StageDeleted {
			return fmt.Errorf("%w: the link %s names %s v%d, which does not exist", db.ErrInvalidRecord, l.LinkKey, l.ChildComponentID, l.ChildVersion)
		}
		if published && cfg.Stage != db.StagePublished && slices.Contains(db.PinLinkKinds, l.LinkKind) {
			return fmt.Errorf("%w: cannot publish %s: it pins %s v%d, a draft; publish the child first", db.ErrConflict, parent, l.ChildComponentID, l.ChildVersion)
		}
	}
	seen := map[string]bool{}
	var frontier []string
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
		for _, ls := range d.comps.links[cur] {
			for _, l := range ls {
				if l.ChildComponentID == parent {
					return fmt.Errorf("%w: linking %s to %s would make %s reach itself", db.ErrComponentCycle, parent, cur, parent)
				}
				frontier = append(frontier, l.ChildComponentID)
			}
		}
	}
	return nil
}

func (d *Driver) setLinks(id string, version int, links []db.ComponentLink, at int64) {
	if d.comps.links[id] == nil {
		d.comps.links[id] = map[int][]db.ComponentLink{}
	}
	out := make([]db.ComponentLink, 0, len(links))
	for _, l := range links {
		l.ParentComponentID, l.ParentVersion, l.CreatedAt, l.Meta = id, version, at, bytes.Clone(l.Meta)
		out = append(out, l)
	}
	slices.SortStableFunc(out, func(a, b db.ComponentLink) int { return cmp.Compare(a.Position, b.Position) })
	if len(out) == 0 {
		delete(d.comps.links[id], version)
		return
	}
	d.comps.links[id][version] = out
}

func (d *Driver) publishComp(c *db.Component, version int, config json.RawMessage, at int64) {
	var ident struct {
		Name        *string `json:"name"`
		Description *string `json:"description"`
	}
	_ = json.Unmarshal(config, &ident)
	c.CurrentVersion, c.UpdatedAt = version, at
	if ident.Name != nil && *ident.Name != "" {
		c.Name = *ident.Name
	}
	if ident.Description != nil {
		c.Description = *ident.Description
	}
}

func (d *Driver) CreateComponent(ctx context.Context, c *db.Component, cfg *db.ComponentConfig, links []db.ComponentLink) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if d.comps.rows == nil {
		d.comps = memComponents{rows: map[string]*db.Component{}, configs: map[string][]*db.ComponentConfig{}, links: map[string]map[int][]db.ComponentLink{}}
	}
	if _, ok := d.comps.rows[c.ComponentID]; ok {
		return fmt.Errorf("%w: component id %s is not available", db.ErrExists, c.ComponentID)
	}
	if err := d.checkCompLinks(c.ComponentID, links, cfg.Stage == db.StagePublished); err != nil {
		return err
	}
	d.comps.rows[c.ComponentID] = cloneComponent(c)
	d.comps.configs[c.ComponentID] = []*db.ComponentConfig{cloneConfig(cfg)}
	d.setLinks(c.ComponentID, 1, links, c.CreatedAt)
	return nil
}

func (d *Driver) GetComponent(ctx context.Context, id string, includeDeleted bool) (*db.Component, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, ok := d.comps.rows[id]
	if !ok || (!includeDeleted && c.DeletedAt != 0) || !compVisible(ctx, c) {
		return nil, fmt.Errorf("%w: component %s", db.ErrNotFound, id)
	}
	return cloneComponent(c), nil
}

func (d *Driver) ListComponents(ctx context.Context, f db.ComponentFilter) ([]db.Component, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	var all []db.Component
	for _, c := range d.comps.rows {
		if (f.ComponentType != "" && c.ComponentType != f.ComponentType) || (f.Name != "" && c.Name != f.Name) ||
			(!f.IncludeDeleted && c.DeletedAt != 0) || !compVisible(ctx, c) {
			continue
		}
		all = append(all, *cloneComponent(c))
	}
	slices.SortFunc(all, func(a, b db.Component) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), strings.Compare(a.ComponentID, b.ComponentID))
	})
	start := min(len(all), (f.Page-1)*f.Limit)
	return append([]db.Component{}, all[start:min(len(all), start+f.Limit)]...), len(all), nil
}

func (d *Driver) UpdateComponent(ctx context.Context, id string, p db.ComponentPatch, at int64) (*db.Component, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := d.writableLive(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.Name != nil {
		c.Name = *p.Name
	}
	if p.Description != nil {
		c.Description = *p.Description
	}
	if p.Metadata != nil {
		c.Metadata = bytes.Clone(p.Metadata)
	}
	c.UpdatedAt = at
	return cloneComponent(c), nil
}

func (d *Driver) liveParents(ctx context.Context, child string, version int) []string {
	u, scoped := db.UserScope(ctx)
	var out []string
	for parent, byVersion := range d.comps.links {
		p := d.comps.rows[parent]
		if p == nil || p.DeletedAt != 0 || (scoped && p.UserID != u && p.UserID != "") {
			continue
		}
		for v, ls := range byVersion {
			if cfg := d.config(parent, v); cfg == nil || cfg.Stage == db.StageDeleted {
				continue
			}
			for _, l := range ls {
				if l.ChildComponentID == child && (version == 0 || l.ChildVersion == version) && !slices.Contains(out, parent) {
					out = append(out, parent)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func (d *Driver) ArchiveComponent(ctx context.Context, id string, at int64) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := d.writable(ctx, id)
	if err != nil || c.DeletedAt != 0 {
		return fmt.Errorf("%w: component %s", db.ErrNotFound, id)
	}
	if parents := d.liveParents(ctx, id, 0); len(parents) > 0 {
		return fmt.Errorf("%w: cannot delete %s: referenced by %s", db.ErrComponentInUse, id, strings.Join(parents, ", "))
	}
	c.DeletedAt, c.UpdatedAt = at, at
	return nil
}

func (d *Driver) archivedChild(id string, version int) string {
	for _, l := range d.comps.links[id][version] {
		if ch := d.comps.rows[l.ChildComponentID]; ch != nil && ch.DeletedAt != 0 {
			return l.ChildComponentID
		}
	}
	return ""
}

func (d *Driver) RestoreComponent(ctx context.Context, id string, at int64) (*db.Component, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := d.writable(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.DeletedAt == 0 {
		return nil, fmt.Errorf("%w: component %s is not archived", db.ErrConflict, id)
	}
	if ch := d.archivedChild(id, c.CurrentVersion); c.CurrentVersion > 0 && ch != "" {
		return nil, fmt.Errorf("%w: cannot restore %s: its child %s is archived; restore it first", db.ErrConflict, id, ch)
	}
	c.DeletedAt, c.UpdatedAt = 0, at
	return cloneComponent(c), nil
}

func (d *Driver) checkCompLabel(id, label string, version int) error {
	for _, c := range d.comps.configs[id] {
		if label != "" && c.Label == label && c.Stage != db.StageDeleted && c.Version != version {
			return fmt.Errorf("%w: label %q already names %s v%d", db.ErrConflict, label, id, c.Version)
		}
	}
	return nil
}

func (d *Driver) AddConfig(ctx context.Context, id string, cfg *db.ComponentConfig, links []db.ComponentLink) (*db.ComponentConfig, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := d.writableLive(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := d.checkCompLabel(id, cfg.Label, 0); err != nil {
		return nil, err
	}
	if err := d.checkCompLinks(id, links, cfg.Stage == db.StagePublished); err != nil {
		return nil, err
	}
	cp := cloneConfig(cfg)
	cp.Version = len(d.comps.configs[id]) + 1 // versions are never removed, only tombstoned
	d.comps.configs[id] = append(d.comps.configs[id], cp)
	d.setLinks(id, cp.Version, links, cp.CreatedAt)
	if cp.Stage == db.StagePublished {
		d.publishComp(c, cp.Version, cp.Config, cp.CreatedAt)
	}
	return cloneConfig(cp), nil
}

func (d *Driver) UpdateConfig(ctx context.Context, id string, version int, p db.ConfigPatch, at int64) (*db.ComponentConfig, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := d.writableLive(ctx, id)
	if err != nil {
		return nil, err
	}
	cur := d.config(id, version)
	if cur == nil || cur.Stage == db.StageDeleted {
		return nil, fmt.Errorf("%w: config %s v%d", db.ErrNotFound, id, version)
	}
	if cur.Stage == db.StagePublished {
		return nil, fmt.Errorf("%w: %s v%d", db.ErrPublishedConfig, id, version)
	}
	next := cloneConfig(cur)
	if p.Config != nil {
		next.Config = bytes.Clone(p.Config)
	}
	if p.Label != nil {
		if err := d.checkCompLabel(id, *p.Label, version); err != nil {
			return nil, err
		}
		next.Label = *p.Label
	}
	if p.Notes != nil {
		next.Notes = *p.Notes
	}
	if p.Stage != nil {
		next.Stage = *p.Stage
	}
	links := d.comps.links[id][version]
	if p.SetLinks {
		links = p.Links
	}
	if p.SetLinks || next.Stage == db.StagePublished {
		if err := d.checkCompLinks(id, links, next.Stage == db.StagePublished); err != nil {
			return nil, err
		}
	}
	if p.SetLinks {
		d.setLinks(id, version, p.Links, at)
	}
	next.UpdatedAt = at
	*cur = *next
	if cur.Stage == db.StagePublished {
		d.publishComp(c, version, cur.Config, at)
	}
	return cloneConfig(cur), nil
}

func (d *Driver) GetConfig(ctx context.Context, id string, version int) (*db.ComponentConfig, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, ok := d.comps.rows[id]
	if !ok || c.DeletedAt != 0 || !compVisible(ctx, c) {
		return nil, fmt.Errorf("%w: component %s", db.ErrNotFound, id)
	}
	if version == 0 {
		version = c.CurrentVersion
	}
	if version == 0 {
		for _, cfg := range slices.Backward(d.comps.configs[id]) {
			if cfg.Stage != db.StageDeleted {
				return cloneConfig(cfg), nil
			}
		}
	} else if cfg := d.config(id, version); cfg != nil && cfg.Stage != db.StageDeleted {
		return cloneConfig(cfg), nil
	}
	return nil, fmt.Errorf("%w: config %s v%d", db.ErrNotFound, id, version)
}

func (d *Driver) ListConfigs(ctx context.Context, id string) ([]db.ComponentConfig, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, ok := d.comps.rows[id]
	if !ok || c.DeletedAt != 0 || !compVisible(ctx, c) {
		return nil, fmt.Errorf("%w: component %s", db.ErrNotFound, id)
	}
	out := []db.ComponentConfig{}
	for _, cfg := range slices.Backward(d.comps.configs[id]) {
		if cfg.Stage != db.StageDeleted {
			out = append(out, *cloneConfig(cfg))
		}
	}
	return out, nil
}

func (d *Driver) DeleteConfig(ctx context.Context, id string, version int, at int64) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := d.writableLive(ctx, id)
	if err != nil {
		return err
	}
	cfg := d.config(id, version)
	switch {
	case cfg == nil || cfg.Stage == db.StageDeleted:
		return fmt.Errorf("%w: config %s v%d", db.ErrNotFound, id, version)
	case cfg.Stage == db.StagePublished:
		return fmt.Errorf("%w: cannot delete %s v%d", db.ErrPublishedConfig, id, version)
	case c.CurrentVersion == version:
		return fmt.Errorf("%w: cannot delete the current config %s v%d", db.ErrInvalidRecord, id, version)
	}
	n := 0
	for _, x := range d.comps.configs[id] {
		if x.Stage != db.StageDeleted {
			n++
		}
	}
	if n <= 1 {
		return fmt.Errorf("%w: %s", db.ErrLastConfig, id)
	}
	if parents := d.liveParents(ctx, id, version); len(parents) > 0 {
		return fmt.Errorf("%w: cannot delete %s v%d: pinned by %s", db.ErrComponentInUse, id, version, strings.Join(parents, ", "))
	}
	cfg.Stage, cfg.Label, cfg.UpdatedAt = db.StageDeleted, "", at
	d.setLinks(id, version, nil, at)
	return nil
}

func (d *Driver) SetCurrentVersion(ctx context.Context, id string, version int, at int64) (*db.Component, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := d.writableLive(ctx, id)
	if err != nil {
		return nil, err
	}
	cfg := d.config(id, version)
	switch {
	case cfg == nil || cfg.Stage == db.StageDeleted:
		return nil, fmt.Errorf("%w: config %s v%d", db.ErrNotFound, id, version)
	case cfg.Stage != db.StagePublished:
		return nil, fmt.Errorf("%w: %s v%d is a draft", db.ErrDraftConfig, id, version)
	}
	if ch := d.archivedChild(id, version); ch != "" {
		return nil, fmt.Errorf("%w: cannot make %s v%d current: its child %s is archived", db.ErrConflict, id, version, ch)
	}
	d.publishComp(c, version, cfg.Config, at)
	return cloneComponent(c), nil
}

func (d *Driver) ListLinks(ctx context.Context, id string, version int) ([]db.ComponentLink, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, ok := d.comps.rows[id]
	if !ok || c.DeletedAt != 0 || !compVisible(ctx, c) {
		return nil, fmt.Errorf("%w: component %s", db.ErrNotFound, id)
	}
	out := []db.ComponentLink{}
	for _, l := range d.comps.links[id][version] {
		l.Meta = bytes.Clone(l.Meta)
		out = append(out, l)
	}
	return out, nil
}
