package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Component is one row of agno_components (Agno 3.0's registry of agents,
// teams and workflows stored in the database). A component without a user
// (UserID "") is shared: every caller may read it, only an unscoped
// (admin) caller may write it. A scoped caller sees its own components,
// shared ones and other users' published ones (CurrentVersion set, not
// archived), as Agno's catalog does.
type Component struct {
	ComponentID string
	// ComponentType is agent, team or workflow; fixed at creation.
	ComponentType string
	Name          string
	UserID        string
	Description   string
	// CurrentVersion is the published config version runs use; 0 when no
	// version is published.
	CurrentVersion int
	Metadata       json.RawMessage
	CreatedAt      int64
	UpdatedAt      int64
	// DeletedAt is set when the component is archived (Agno's soft delete:
	// the id stays reserved and restore brings every version back).
	DeletedAt int64
}

// ComponentConfig is one row of agno_component_configs: a version of a
// component's config. Drafts can be edited; published versions are
// immutable. A deleted draft keeps its number with stage "_deleted".
type ComponentConfig struct {
	ComponentID string
	Version     int
	Label       string
	// Stage is draft or published ("_deleted" for a tombstone).
	Stage     string
	Config    json.RawMessage
	Notes     string
	CreatedAt int64
	UpdatedAt int64
}

// ComponentLink is one row of agno_component_links: a config version of a
// parent pinning a version of a child component (a team's member, a
// workflow step's agent, team or workflow).
type ComponentLink struct {
	ParentComponentID string
	ParentVersion     int
	// LinkKind is member, step_agent, step_team or step_workflow (other
	// kinds are stored as given).
	LinkKind         string
	LinkKey          string
	ChildComponentID string
	ChildVersion     int
	Position         int
	Meta             json.RawMessage
	CreatedAt        int64
	UpdatedAt        int64
}

// Component types, config stages and link kinds as Agno 3.0 writes them.
const (
	ComponentAgent    = "agent"
	ComponentTeam     = "team"
	ComponentWorkflow = "workflow"

	StageDraft     = "draft"
	StagePublished = "published"
	// StageDeleted marks a tombstoned draft (Agno's DELETED_CONFIG_STAGE).
	StageDeleted = "_deleted"
)

// ComponentTypes are the component_type values Agno knows.
var ComponentTypes = []string{ComponentAgent, ComponentTeam, ComponentWorkflow}

// PinLinkKinds are the link kinds that pin a child version a parent is
// rebuilt from (Agno's PIN_LINK_KINDS).
var PinLinkKinds = []string{"member", "step_agent", "step_team", "step_workflow"}

// Errors of the component registry. Each wraps ErrInvalidRecord (a request
// that can never succeed as written: 400) or ErrConflict (the stored state
// refuses it now: 409).
var (
	// ErrConflict: the write conflicts with the stored state (an archived
	// component, a version pinned by a live parent, a cycle of links).
	ErrConflict = errors.New("db: conflict")
	// ErrComponentCycle: the links would make a component reach itself.
	ErrComponentCycle = fmt.Errorf("%w: the links would close a cycle", ErrConflict)
	// ErrComponentArchived: the component is archived; restore it first.
	ErrComponentArchived = fmt.Errorf("%w: the component is archived; restore it first", ErrConflict)
	// ErrComponentInUse: a live parent pins the component (or the version).
	ErrComponentInUse = fmt.Errorf("%w: a live component links to it", ErrConflict)
	// ErrLastConfig: the version is the component's last one.
	ErrLastConfig = fmt.Errorf("%w: the last config version cannot be deleted", ErrConflict)
	// ErrPublishedConfig: published versions are immutable.
	ErrPublishedConfig = fmt.Errorf("%w: published configs are immutable; only drafts can be changed or deleted", ErrInvalidRecord)
	// ErrDraftConfig: only a published version can be current.
	ErrDraftConfig = fmt.Errorf("%w: only a published config can be current", ErrInvalidRecord)
)

// ComponentFilter selects components. Limit (1–1000) and Page (from 1) are
// required; empty fields do not filter.
type ComponentFilter struct {
	ComponentType string
	Name          string
	// IncludeDeleted also lists archived components (a scoped caller sees
	// only its own archived ones).
	IncludeDeleted bool
	Limit, Page    int
}

// ComponentPatch changes a component's row; nil fields are left alone.
type ComponentPatch struct {
	Name, Description *string
	Metadata          json.RawMessage
}

// ConfigPatch changes a draft config version; nil fields are left alone.
// Links, when SetLinks, replace the version's links (an empty list clears
// them).
type ConfigPatch struct {
	Config              json.RawMessage
	Label, Stage, Notes *string
	Links               []ComponentLink
	SetLinks            bool
}

// ComponentDriver stores the component registry. Reads apply the
// context's user scope as Agno's catalog visibility (own, shared, others'
// published); writes apply it strictly (a scoped caller writes only its own
// rows: another user's or a shared row is ErrNotFound).
type ComponentDriver interface {
	// CreateComponent inserts a component with its first config version
	// (version 1) and the version's links; a taken id is ErrExists.
	CreateComponent(ctx context.Context, c *Component, cfg *ComponentConfig, links []ComponentLink) error
	// GetComponent returns a visible component or ErrNotFound.
	GetComponent(ctx context.Context, id string, includeDeleted bool) (*Component, error)
	// ListComponents pages visible components, newest first, and counts them.
	ListComponents(ctx context.Context, f ComponentFilter) ([]Component, int, error)
	// UpdateComponent applies p to a live component.
	UpdateComponent(ctx context.Context, id string, p ComponentPatch, at int64) (*Component, error)
	// ArchiveComponent sets deleted_at; ErrComponentInUse when a live parent
	// links to it.
	ArchiveComponent(ctx context.Context, id string, at int64) error
	// RestoreComponent clears deleted_at.
	RestoreComponent(ctx context.Context, id string, at int64) (*Component, error)
	// AddConfig appends a version (the highest number used plus one) with
	// its links; a published version becomes current.
	AddConfig(ctx context.Context, id string, cfg *ComponentConfig, links []ComponentLink) (*ComponentConfig, error)
	// UpdateConfig changes a draft version; publishing it makes it current.
	UpdateConfig(ctx context.Context, id string, version int, p ConfigPatch, at int64) (*ComponentConfig, error)
	// GetConfig returns a version of a live component (0: the current one,
	// or the latest when none is published); tombstones are ErrNotFound.
	GetConfig(ctx context.Context, id string, version int) (*ComponentConfig, error)
	// ListConfigs lists a live component's versions, newest first.
	ListConfigs(ctx context.Context, id string) ([]ComponentConfig, error)
	// DeleteConfig tombstones a draft version that is neither current, the
	// last one, nor pinned by a live parent.
	DeleteConfig(ctx context.Context, id string, version int, at int64) error
	// SetCurrentVersion points the component at a published version.
	SetCurrentVersion(ctx context.Context, id string, version int, at int64) (*Component, error)
	// ListLinks returns a version's links by position.
	ListLinks(ctx context.Context, id string, version int) ([]ComponentLink, error)
}

func (d *DB) componentDriver() (ComponentDriver, error) {
	c, ok := d.driver.(ComponentDriver)
	if !ok {
		return nil, fmt.Errorf("%w: the %s driver does not store components", ErrUnsupportedDriver, d.driver.Dialect())
	}
	return c, nil
}

// SupportsComponents reports whether the database stores components.
func (d *DB) SupportsComponents() bool {
	_, err := d.componentDriver()
	return err == nil
}

// MaxComponentIDBytes bounds component ids (they are URL path segments).
const MaxComponentIDBytes = 255

func checkComponentID(id string) error {
	if id == "" || len(id) > MaxComponentIDBytes || !utf8.ValidString(id) {
		return fmt.Errorf("%w: a component id is 1 to %d bytes of UTF-8", ErrInvalidRecord, MaxComponentIDBytes)
	}
	return checkNotPadded("component id", id)
}

func checkStage(stage string) error {
	if stage != StageDraft && stage != StagePublished {
		return fmt.Errorf("%w: stage must be draft or published, not %q", ErrInvalidRecord, stage)
	}
	return nil
}

func checkConfigJSON(raw json.RawMessage) error {
	var obj map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil || obj == nil {
		return fmt.Errorf("%w: a config is a JSON object", ErrInvalidRecord)
	}
	return nil
}

func checkLinks(parent string, links []ComponentLink) error {
	seen := map[[2]string]bool{}
	for _, l := range links {
		switch {
		case l.LinkKind == "" || l.LinkKey == "":
			return fmt.Errorf("%w: a link needs link_kind and link_key", ErrInvalidRecord)
		case checkComponentID(l.ChildComponentID) != nil:
			return fmt.Errorf("%w: a link needs child_component_id", ErrInvalidRecord)
		case l.ChildVersion < 1:
			return fmt.Errorf("%w: the link to %s needs child_version (1 or more)", ErrInvalidRecord, l.ChildComponentID)
		case l.ChildComponentID == parent:
			return fmt.Errorf("%w: component %s cannot link to itself", ErrComponentCycle, parent)
		case seen[[2]string{l.LinkKind, l.LinkKey}]:
			return fmt.Errorf("%w: two links share link_kind %q and link_key %q", ErrInvalidRecord, l.LinkKind, l.LinkKey)
		}
		seen[[2]string{l.LinkKind, l.LinkKey}] = true
		if len(l.Meta) > 0 && !json.Valid(l.Meta) {
			return fmt.Errorf("%w: link meta is not JSON", ErrInvalidRecord)
		}
	}
	return nil
}

// CreateComponent validates and stores a component with its first config
// version (stage draft unless published; a published one is current). A
// scoped caller creates it as itself.
func (d *DB) CreateComponent(ctx context.Context, c *Component, cfg *ComponentConfig, links []ComponentLink) (*Component, *ComponentConfig, error) {
	drv, err := d.componentDriver()
	if err != nil {
		return nil, nil, err
	}
	if c == nil || cfg == nil {
		return nil, nil, fmt.Errorf("%w: a component needs its config", ErrInvalidRecord)
	}
	if err := checkComponentID(c.ComponentID); err != nil {
		return nil, nil, err
	}
	if !slices.Contains(ComponentTypes, c.ComponentType) {
		return nil, nil, fmt.Errorf("%w: component_type must be agent, team or workflow", ErrInvalidRecord)
	}
	cc, cf := *c, *cfg
	if cf.Stage == "" {
		cf.Stage = StageDraft
	}
	if err := checkStage(cf.Stage); err != nil {
		return nil, nil, err
	}
	if err := checkConfigJSON(cf.Config); err != nil {
		return nil, nil, err
	}
	if err := checkLinks(cc.ComponentID, links); err != nil {
		return nil, nil, err
	}
	if u, ok := UserScope(ctx); ok {
		cc.UserID = u
	}
	now := d.now().Unix()
	cc.CreatedAt, cc.UpdatedAt, cc.DeletedAt, cc.CurrentVersion = now, 0, 0, 0
	if cf.Stage == StagePublished {
		cc.CurrentVersion = 1
	}
	if cc.Name == "" {
		cc.Name = cc.ComponentID
	}
	cf.ComponentID, cf.Version, cf.CreatedAt, cf.UpdatedAt = cc.ComponentID, 1, now, 0
	ctx, call := d.bound(ctx)
	if err := call.done(drv.CreateComponent(ctx, &cc, &cf, links)); err != nil {
		return nil, nil, err
	}
	return &cc, &cf, nil
}

// GetComponent returns a component visible to the context's user.
func (d *DB) GetComponent(ctx context.Context, id string, includeDeleted bool) (*Component, error) {
	drv, err := d.componentDriver()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	c, err := drv.GetComponent(ctx, id, includeDeleted)
	return c, call.done(err)
}

// ListComponents pages the components visible to the context's user.
func (d *DB) ListComponents(ctx context.Context, f ComponentFilter) ([]Component, int, error) {
	drv, err := d.componentDriver()
	if err != nil {
		return nil, 0, err
	}
	if f.Limit < 1 || f.Limit > 1000 || f.Page < 1 || PageOffsetOverflows(f.Limit, f.Page) {
		return nil, 0, fmt.Errorf("%w: limit must be 1 to 1000 and page 1 or more", ErrInvalidFilter)
	}
	if f.ComponentType != "" && !slices.Contains(ComponentTypes, f.ComponentType) {
		return nil, 0, fmt.Errorf("%w: component_type must be agent, team or workflow", ErrInvalidFilter)
	}
	ctx, call := d.bound(ctx)
	out, n, err := drv.ListComponents(ctx, f)
	return out, n, call.done(err)
}

// UpdateComponent changes a component's name, description or metadata.
func (d *DB) UpdateComponent(ctx context.Context, id string, p ComponentPatch) (*Component, error) {
	drv, err := d.componentDriver()
	if err != nil {
		return nil, err
	}
	if len(p.Metadata) > 0 && checkConfigJSON(p.Metadata) != nil {
		return nil, fmt.Errorf("%w: metadata is a JSON object", ErrInvalidRecord)
	}
	ctx, call := d.bound(ctx)
	c, err := drv.UpdateComponent(ctx, id, p, d.now().Unix())
	return c, call.done(err)
}

// ArchiveComponent archives (soft-deletes) a component.
func (d *DB) ArchiveComponent(ctx context.Context, id string) error {
	drv, err := d.componentDriver()
	if err != nil {
		return err
	}
	ctx, call := d.bound(ctx)
	return call.done(drv.ArchiveComponent(ctx, id, d.now().Unix()))
}

// RestoreComponent restores an archived component.
func (d *DB) RestoreComponent(ctx context.Context, id string) (*Component, error) {
	drv, err := d.componentDriver()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	c, err := drv.RestoreComponent(ctx, id, d.now().Unix())
	return c, call.done(err)
}

// AddConfig appends a config version (stage draft unless published).
func (d *DB) AddConfig(ctx context.Context, id string, cfg *ComponentConfig, links []ComponentLink) (*ComponentConfig, error) {
	drv, err := d.componentDriver()
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return nil, fmt.Errorf("%w: config is required", ErrInvalidRecord)
	}
	cf := *cfg
	if cf.Stage == "" {
		cf.Stage = StageDraft
	}
	if err := checkStage(cf.Stage); err != nil {
		return nil, err
	}
	if err := checkConfigJSON(cf.Config); err != nil {
		return nil, err
	}
	if err := checkLinks(id, links); err != nil {
		return nil, err
	}
	cf.ComponentID, cf.CreatedAt, cf.UpdatedAt = id, d.now().Unix(), 0
	ctx, call := d.bound(ctx)
	out, err := drv.AddConfig(ctx, id, &cf, links)
	return out, call.done(err)
}

// UpdateConfig changes a draft config version.
func (d *DB) UpdateConfig(ctx context.Context, id string, version int, p ConfigPatch) (*ComponentConfig, error) {
	drv, err := d.componentDriver()
	if err != nil {
		return nil, err
	}
	if p.Stage != nil {
		if err := checkStage(*p.Stage); err != nil {
			return nil, err
		}
	}
	if p.Config != nil {
		if err := checkConfigJSON(p.Config); err != nil {
			return nil, err
		}
	}
	if err := checkLinks(id, p.Links); err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := drv.UpdateConfig(ctx, id, version, p, d.now().Unix())
	return out, call.done(err)
}

// GetConfig returns a config version (0: current, else latest).
func (d *DB) GetConfig(ctx context.Context, id string, version int) (*ComponentConfig, error) {
	drv, err := d.componentDriver()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := drv.GetConfig(ctx, id, version)
	return out, call.done(err)
}

// ListConfigs lists a component's config versions, newest first.
func (d *DB) ListConfigs(ctx context.Context, id string) ([]ComponentConfig, error) {
	drv, err := d.componentDriver()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := drv.ListConfigs(ctx, id)
	return out, call.done(err)
}

// DeleteConfig tombstones a draft config version.
func (d *DB) DeleteConfig(ctx context.Context, id string, version int) error {
	drv, err := d.componentDriver()
	if err != nil {
		return err
	}
	ctx, call := d.bound(ctx)
	return call.done(drv.DeleteConfig(ctx, id, version, d.now().Unix()))
}

// SetCurrentVersion makes a published version current.
func (d *DB) SetCurrentVersion(ctx context.Context, id string, version int) (*Component, error) {
	drv, err := d.componentDriver()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := drv.SetCurrentVersion(ctx, id, version, d.now().Unix())
	return out, call.done(err)
}

// ListLinks returns a config version's links.
func (d *DB) ListLinks(ctx context.Context, id string, version int) ([]ComponentLink, error) {
	drv, err := d.componentDriver()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := drv.ListLinks(ctx, id, version)
	return out, call.done(err)
}
