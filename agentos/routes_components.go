package agentos

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
)

// The /components routes (Agno 3.0's components router): a registry of
// agents, teams and workflows stored in the default database with
// versioned configs. A scoped caller (user isolation) sees its own
// components, shared ones (no owner) and other users' published ones; it
// writes only its own: a write to a visible component it does not own is
// 403, as in Agno, and another user's unpublished component is 404.
// Configs are checked by building them when written, so a run never finds
// an invalid one.

// componentView is Agno's ComponentResponse (null fields left out).
type componentView struct {
	ComponentID    string          `json:"component_id"`
	ComponentType  string          `json:"component_type"`
	Name           *string         `json:"name,omitempty"`
	UserID         *string         `json:"user_id,omitempty"`
	Description    *string         `json:"description,omitempty"`
	CurrentVersion *int            `json:"current_version,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	CreatedAt      int64           `json:"created_at"`
	UpdatedAt      *int64          `json:"updated_at,omitempty"`
	DeletedAt      *int64          `json:"deleted_at,omitempty"`
}

func newComponentView(c *db.Component) componentView {
	v := componentView{ComponentID: c.ComponentID, ComponentType: c.ComponentType, Name: optional(c.Name), UserID: optional(c.UserID),
		Description: optional(c.Description), Metadata: c.Metadata, CreatedAt: c.CreatedAt}
	if c.CurrentVersion > 0 {
		v.CurrentVersion = &c.CurrentVersion
	}
	if c.UpdatedAt != 0 {
		v.UpdatedAt = &c.UpdatedAt
	}
	if c.DeletedAt != 0 {
		v.DeletedAt = &c.DeletedAt
	}
	return v
}

// configView is Agno's ComponentConfigResponse.
type configView struct {
	ComponentID string          `json:"component_id"`
	Version     int             `json:"version"`
	Label       *string         `json:"label,omitempty"`
	Stage       string          `json:"stage"`
	Config      json.RawMessage `json:"config,omitempty"`
	Notes       *string         `json:"notes,omitempty"`
	CreatedAt   int64           `json:"created_at"`
	UpdatedAt   *int64          `json:"updated_at,omitempty"`
}

func newConfigView(c *db.ComponentConfig, withConfig bool) configView {
	v := configView{ComponentID: c.ComponentID, Version: c.Version, Label: optional(c.Label), Stage: c.Stage, Notes: optional(c.Notes), CreatedAt: c.CreatedAt}
	if withConfig {
		v.Config = c.Config
	}
	if c.UpdatedAt != 0 {
		v.UpdatedAt = &c.UpdatedAt
	}
	return v
}

// linkView is one agno_component_links row.
type linkView struct {
	ParentComponentID string          `json:"parent_component_id"`
	ParentVersion     int             `json:"parent_version"`
	LinkKind          string          `json:"link_kind"`
	LinkKey           string          `json:"link_key"`
	ChildComponentID  string          `json:"child_component_id"`
	ChildVersion      int             `json:"child_version"`
	Position          int             `json:"position"`
	Meta              json.RawMessage `json:"meta,omitempty"`
	CreatedAt         int64           `json:"created_at,omitempty"`
}

// componentGuard is Agno's ComponentGuard (compare-and-set).
type componentGuard struct {
	LatestVersion  *int `json:"latest_version"`
	CurrentVersion *int `json:"current_version"`
}

// linkBody is a link as a request gives it (child_version may be a
// number or a numeric string, as Agno accepts).
type linkBody struct {
	LinkKind         string          `json:"link_kind"`
	LinkKey          string          `json:"link_key"`
	ChildComponentID string          `json:"child_component_id"`
	ChildVersion     json.RawMessage `json:"child_version"`
	Position         int             `json:"position"`
	Meta             json.RawMessage `json:"meta"`
}

// componentErr maps the registry's errors: a request that can never succeed
// as written is 400 (Agno's ValueError), a conflict with the stored state
// 409; the rest as everywhere.
func componentErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, config.ErrComponentConfig):
		return &httpError{Status: http.StatusBadRequest, Detail: strings.TrimPrefix(err.Error(), config.ErrComponentConfig.Error()+": "), Err: err}
	case errors.Is(err, db.ErrConflict), errors.Is(err, db.ErrExists):
		return &httpError{Status: http.StatusConflict, Detail: strings.TrimPrefix(err.Error(), "db: "), Err: err}
	case errors.Is(err, db.ErrInvalidRecord):
		return &httpError{Status: http.StatusBadRequest, Detail: strings.TrimPrefix(err.Error(), "db: invalid record: "), Err: err}
	}
	return err
}

// componentParam reads {component_id} and the caller's view of it: 404
// when the caller cannot see it.
func (s *Server) loadComponent(r *http.Request, includeDeleted bool) (*db.DB, *db.Component, error) {
	d, err := s.componentDB()
	if err != nil {
		return nil, nil, err
	}
	id := chi.URLParam(r, "component_id")
	c, err := d.GetComponent(r.Context(), id, includeDeleted)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil, errorf(http.StatusNotFound, "Component %s not found", id)
	}
	if err != nil {
		return nil, nil, err
	}
	return d, c, nil
}

// loadWritable loads the path's live component for a write (verb, as
// requireWrite words it).
func (s *Server) loadWritable(r *http.Request, verb string) (*db.DB, *db.Component, error) {
	d, c, err := s.loadComponent(r, false)
	if err != nil {
		return nil, nil, err
	}
	if err := requireWrite(r, c, verb); err != nil {
		return nil, nil, err
	}
	return d, c, nil
}

// loadWritableVersion is loadWritable and the path's config version.
func (s *Server) loadWritableVersion(r *http.Request, verb string) (*db.DB, *db.Component, int, error) {
	d, c, err := s.loadWritable(r, verb)
	if err != nil {
		return nil, nil, 0, err
	}
	version, err := versionParam(r)
	if err != nil {
		return nil, nil, 0, err
	}
	return d, c, version, nil
}

// requireWrite refuses a scoped caller writing a component it sees but does
// not own (shared, or another user's published one): 403, as Agno.
func requireWrite(r *http.Request, c *db.Component, verb string) error {
	u, scoped := db.UserScope(r.Context())
	switch {
	case !scoped:
		return nil
	case c.UserID == "":
		return errorf(http.StatusForbidden, "Cannot %s shared component", verb)
	case c.UserID != u:
		return errorf(http.StatusForbidden, "Cannot %s component owned by another user", verb)
	}
	return nil
}

// mayReadDrafts reports whether the caller may read c's draft versions:
// unscoped callers, its owner, and anyone for a shared component.
func mayReadDrafts(r *http.Request, c *db.Component) bool {
	u, scoped := db.UserScope(r.Context())
	if !scoped {
		if p, ok := auth.FromContext(r.Context()); ok && !p.Admin && p.UserID != "" && c.UserID != "" && c.UserID != p.UserID {
			return false // isolation off: a plain caller still does not read another owner's drafts
		}
		return true
	}
	return c.UserID == "" || c.UserID == u
}

func boolQuery(r *http.Request, name string, def bool) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errorf(http.StatusUnprocessableEntity, "%s must be true or false", name)
	}
	return b, nil
}

func versionParam(r *http.Request) (int, error) {
	v, err := strconv.Atoi(chi.URLParam(r, "version"))
	if err != nil || v < 1 || v > 1<<31-1 {
		return 0, errorf(http.StatusUnprocessableEntity, "version must be a positive integer")
	}
	return v, nil
}

var componentPageRules = pageRules{DefaultLimit: 20, MaxLimit: 100}

// listComponents is GET /components: component_type, include_deleted, page, limit.
func (s *Server) listComponents(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, err := s.componentDB()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	pq, err := parsePageQuery(q, componentPageRules)
	if err != nil {
		return err
	}
	typ := q.Get("component_type")
	if typ != "" && !slices.Contains(db.ComponentTypes, typ) {
		return errorf(http.StatusUnprocessableEntity, "component_type must be agent, team or workflow")
	}
	deleted, err := boolQuery(r, "include_deleted", false)
	if err != nil {
		return err
	}
	list, total, err := d.ListComponents(r.Context(), db.ComponentFilter{ComponentType: typ, IncludeDeleted: deleted, Limit: pq.Limit, Page: pq.Page})
	if err = s.leaveOutCorrupt(r.Context(), "list components", err); err != nil {
		return err
	}
	views := make([]componentView, 0, len(list))
	for i := range list {
		views = append(views, newComponentView(&list[i]))
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

func (s *Server) getComponent(w http.ResponseWriter, r *http.Request) error {
	deleted, err := boolQuery(r, "include_deleted", false)
	if err != nil {
		return err
	}
	_, c, err := s.loadComponent(r, deleted)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newComponentView(c))
	return nil
}

var slugChars = regexp.MustCompile(`[^a-z0-9._-]+`)

// mintComponentID makes an id from a name (and, for a scoped caller, a
// suffix of its user id's hash, so two users' names do not collide).
func mintComponentID(name, user string) string {
	id := strings.Trim(slugChars.ReplaceAllString(strings.ToLower(name), "-"), "-.")
	if id == "" {
		id = "component"
	}
	if len(id) > 200 {
		id = id[:200]
	}
	if user != "" {
		h := sha256.Sum256([]byte(user))
		id += "-" + hex.EncodeToString(h[:])[:8]
	}
	return id
}

// Component name and description bounds: the name column is VARCHAR(255)
// (Agno's WIDTH_NAME), the description a TEXT column (64 KiB in MySQL).
const (
	maxComponentName        = 255
	maxComponentDescription = 65535
)

// checkComponentText refuses (422) a component name that is blank or
// longer than its column, and a description longer than its column, before
// the database does (a 500, or a component no list can show by name). A nil
// pointer is a field not given.
func checkComponentText(name, description *string) error {
	if name != nil {
		if strings.TrimSpace(*name) == "" {
			return errorf(http.StatusUnprocessableEntity, "name is required: 1 to %d characters, not blank", maxComponentName)
		}
		if utf8.RuneCountInString(*name) > maxComponentName {
			return errorf(http.StatusUnprocessableEntity, "name must be at most %d characters", maxComponentName)
		}
	}
	if description != nil && len(*description) > maxComponentDescription {
		return errorf(http.StatusUnprocessableEntity, "description must be at most %d bytes", maxComponentDescription)
	}
	return nil
}

// createComponent is POST /components (Agno's ComponentCreate).
func (s *Server) createComponent(w http.ResponseWriter, r *http.Request) error {
	d, err := s.componentDB()
	if err != nil {
		return err
	}
	var body struct {
		Name          string          `json:"name"`
		ComponentID   *string         `json:"component_id"`
		ComponentType string          `json:"component_type"`
		Description   *string         `json:"description"`
		Metadata      json.RawMessage `json:"metadata"`
		Config        json.RawMessage `json:"config"`
		Label         *string         `json:"label"`
		Stage         *string         `json:"stage"`
		Notes         *string         `json:"notes"`
		// SetCurrent: see checkSetCurrent.
		SetCurrent *bool `json:"set_current"`
	}
	if err := decodeJSONBody(r, &body); err != nil {
		return err
	}
	if err := checkSetCurrent(body.SetCurrent, body.Stage); err != nil {
		return err
	}
	if err := checkComponentText(&body.Name, body.Description); err != nil {
		return err
	}
	switch {
	case !slices.Contains(db.ComponentTypes, body.ComponentType):
		return errorf(http.StatusUnprocessableEntity, "component_type must be agent, team or workflow")
	case isJSONNull(body.Config):
		body.Config = json.RawMessage(`{}`)
	}
	if !isJSONNull(body.Metadata) && !isJSONObject(body.Metadata) {
		return errorf(http.StatusUnprocessableEntity, "metadata must be an object")
	}
	user, _ := db.UserScope(r.Context())
	id := mintComponentID(body.Name, user)
	if body.ComponentID != nil {
		id = *body.ComponentID
	}
	if err := config.CheckComponentID(id); err != nil {
		return componentErr(err)
	}
	if s.configured(body.ComponentType, id) {
		return errorf(http.StatusConflict, "Component ID %s is not available: a configured %s has it", id, body.ComponentType)
	}
	c := &db.Component{ComponentID: id, ComponentType: body.ComponentType, Name: body.Name, Description: deref(body.Description), Metadata: nullIfJSONNull(body.Metadata)}
	cfg := &db.ComponentConfig{Config: body.Config, Label: deref(body.Label), Stage: deref(body.Stage), Notes: deref(body.Notes)}
	links, err := s.checkComponentConfig(r, c, body.Config, nil)
	if err != nil {
		return err
	}
	created, _, err := d.CreateComponent(r.Context(), c, cfg, links)
	if err != nil {
		return componentErr(err)
	}
	writeJSON(w, http.StatusCreated, newComponentView(created))
	return nil
}

// checkComponentConfig builds c from raw (the proof that runs will be able
// to) and returns the links the version stores: explicit ones when given,
// else those derived from the members or steps naming stored components.
func (s *Server) checkComponentConfig(r *http.Request, c *db.Component, raw json.RawMessage, explicit []linkBody) ([]db.ComponentLink, error) {
	links, err := s.deriveLinks(r, c, raw)
	if err != nil {
		return nil, componentErr(err)
	}
	if explicit != nil {
		if links, err = s.explicitLinks(r, explicit); err != nil {
			return nil, err
		}
	}
	for _, l := range links {
		if l.ChildComponentID == c.ComponentID {
			return nil, errorf(http.StatusConflict, "component %s cannot link to itself", c.ComponentID)
		}
	}
	if _, err := s.buildStored(r.Context(), c, raw, links, nil); err != nil {
		return nil, componentErr(err)
	}
	return links, nil
}

// deriveLinks pins the stored components a team's members or a workflow's
// steps name (configured ones need no link) at their current version (the
// latest when none is published), as Agno's routes do.
func (s *Server) deriveLinks(r *http.Request, c *db.Component, raw json.RawMessage) ([]db.ComponentLink, error) {
	policy := s.cfg.Components.Policy
	type ref struct{ kind, key, id, typ string }
	var refs []ref
	switch c.ComponentType {
	case db.ComponentTeam:
		t, err := config.ParseTeamComponent(raw, policy)
		if err != nil {
			return nil, err
		}
		for i, m := range t.Members {
			refs = append(refs, ref{"member", fmt.Sprintf("member_%d", i), m, ""})
		}
	case db.ComponentWorkflow:
		wf, err := config.ParseWorkflowComponent(raw, policy)
		if err != nil {
			return nil, err
		}
		var walk func(prefix string, steps []config.WorkflowStep)
		walk = func(prefix string, steps []config.WorkflowStep) {
			for i, st := range steps {
				key := st.Name
				if key == "" {
					key = prefix + strconv.Itoa(i)
				}
				if st.Agent != "" {
					refs = append(refs, ref{"step_agent", key, st.Agent, db.ComponentAgent})
				}
				if st.Team != "" {
					refs = append(refs, ref{"step_team", key, st.Team, db.ComponentTeam})
				}
				if st.Workflow != "" {
					refs = append(refs, ref{"step_workflow", key, st.Workflow, db.ComponentWorkflow})
				}
				for _, inner := range [][]config.WorkflowStep{stepsOf(st.Steps), stepsOf(st.Parallel), loopSteps(st), condSteps(st, false), condSteps(st, true), routerChoices(st)} {
					walk(key+"/", inner)
				}
			}
		}
		walk("step_", wf.Steps)
	}
	var out []db.ComponentLink
	seen := map[[2]string]string{}
	for _, rf := range refs {
		if s.configured(db.ComponentAgent, rf.id) || s.configured(db.ComponentTeam, rf.id) || (rf.kind == "step_workflow" && s.configured(db.ComponentWorkflow, rf.id)) {
			continue
		}
		if rf.id == c.ComponentID {
			return nil, fmt.Errorf("%w: %s contains itself (a step runs %s)", db.ErrComponentCycle, c.ComponentID, rf.id)
		}
		child, err := s.dbs[0].GetComponent(r.Context(), rf.id, false)
		if errors.Is(err, db.ErrNotFound) {
			return nil, fmt.Errorf("%w: no agent, team or workflow with id %q (configured or stored)", config.ErrComponentConfig, rf.id)
		}
		if err != nil {
			return nil, err
		}
		if rf.typ != "" && child.ComponentType != rf.typ {
			return nil, fmt.Errorf("%w: %s is a %s, not a %s", config.ErrComponentConfig, rf.id, child.ComponentType, rf.typ)
		}
		if prev, dup := seen[[2]string{rf.kind, rf.key}]; dup {
			if prev != rf.id {
				return nil, fmt.Errorf("%w: two steps share the name %q but run different components; name them apart", config.ErrComponentConfig, rf.key)
			}
			continue
		}
		seen[[2]string{rf.kind, rf.key}] = rf.id
		version := child.CurrentVersion
		if version == 0 {
			latest, err := s.dbs[0].GetConfig(r.Context(), rf.id, 0)
			if err != nil {
				return nil, err
			}
			version = latest.Version
		}
		meta, _ := json.Marshal(map[string]string{"type": child.ComponentType})
		out = append(out, db.ComponentLink{LinkKind: rf.kind, LinkKey: rf.key, ChildComponentID: rf.id, ChildVersion: version, Position: len(out), Meta: meta})
	}
	return out, nil
}

func stepsOf(d *config.StepsDecl) []config.WorkflowStep {
	if d == nil {
		return nil
	}
	return d.Steps
}

func loopSteps(st config.WorkflowStep) []config.WorkflowStep {
	if st.Loop == nil {
		return nil
	}
	return st.Loop.Steps
}

func condSteps(st config.WorkflowStep, elseBranch bool) []config.WorkflowStep {
	switch {
	case st.Condition == nil:
		return nil
	case elseBranch:
		return st.Condition.Else
	}
	return st.Condition.Steps
}

func routerChoices(st config.WorkflowStep) []config.WorkflowStep {
	if st.Router == nil {
		return nil
	}
	return st.Router.Choices
}

// explicitLinks reads a request's links: each names a stored component the
// caller can see, at a version it may read.
func (s *Server) explicitLinks(r *http.Request, in []linkBody) ([]db.ComponentLink, error) {
	out := make([]db.ComponentLink, 0, len(in))
	for i, l := range in {
		v, err := linkVersion(l.ChildVersion)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "links[%d]: %v", i, err)
		}
		if l.LinkKind == "" || l.LinkKey == "" || l.ChildComponentID == "" {
			return nil, errorf(http.StatusBadRequest, "links[%d]: link_kind, link_key and child_component_id are required", i)
		}
		child, err := s.dbs[0].GetComponent(r.Context(), l.ChildComponentID, false)
		if errors.Is(err, db.ErrNotFound) {
			return nil, errorf(http.StatusBadRequest, "links[%d]: component %s does not exist", i, l.ChildComponentID)
		}
		if err != nil {
			return nil, err
		}
		if !mayReadDrafts(r, child) {
			cfg, err := s.dbs[0].GetConfig(r.Context(), l.ChildComponentID, v)
			if errors.Is(err, db.ErrNotFound) || (err == nil && cfg.Stage != db.StagePublished) {
				return nil, errorf(http.StatusNotFound, "Config %s v%d not found", l.ChildComponentID, v)
			}
			if err != nil {
				return nil, err
			}
		}
		if !isJSONNull(l.Meta) && !json.Valid(l.Meta) {
			return nil, errorf(http.StatusBadRequest, "links[%d]: meta is not JSON", i)
		}
		out = append(out, db.ComponentLink{LinkKind: l.LinkKind, LinkKey: l.LinkKey, ChildComponentID: l.ChildComponentID, ChildVersion: v,
			Position: l.Position, Meta: nullIfJSONNull(l.Meta)})
	}
	return out, nil
}

// linkVersion reads child_version: an integer, an integral float or a
// numeric string, from 1 to 2³¹-1 (Agno's rule).
func linkVersion(raw json.RawMessage) (int, error) {
	var v any
	if isJSONNull(raw) || json.Unmarshal(raw, &v) != nil {
		return 0, errors.New("child_version is required")
	}
	var n float64
	switch x := v.(type) {
	case float64:
		n = x
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return 0, fmt.Errorf("child_version %q is not an integer version number", x)
		}
		n = float64(i)
	default:
		return 0, fmt.Errorf("child_version %s is not an integer version number", raw)
	}
	if n != float64(int64(n)) {
		return 0, fmt.Errorf("child_version %v is not an integer version number", n)
	}
	if n < 1 || n > 1<<31-1 {
		return 0, fmt.Errorf("child_version %v is out of range", n)
	}
	return int(n), nil
}

// patchComponent is PATCH /components/{component_id} (Agno's ComponentUpdate).
func (s *Server) patchComponent(w http.ResponseWriter, r *http.Request) error {
	d, c, err := s.loadWritable(r, "modify")
	if err != nil {
		return err
	}
	var body struct {
		Name           *string         `json:"name"`
		Description    *string         `json:"description"`
		ComponentType  *string         `json:"component_type"`
		Metadata       json.RawMessage `json:"metadata"`
		CurrentVersion *int            `json:"current_version"`
		Guard          *componentGuard `json:"guard"`
	}
	if err := decodeJSONBody(r, &body); err != nil {
		return err
	}
	if err := checkComponentText(body.Name, body.Description); err != nil {
		return err
	}
	if body.Guard != nil && body.Guard.LatestVersion != nil {
		return errorf(http.StatusBadRequest, "This route checks guard.current_version only; guard.latest_version is not honoured here")
	}
	if body.Guard != nil && body.Guard.CurrentVersion != nil && *body.Guard.CurrentVersion != c.CurrentVersion {
		return errorf(http.StatusConflict, "Component %s current version is %d, expected %d", c.ComponentID, c.CurrentVersion, *body.Guard.CurrentVersion)
	}
	if body.ComponentType != nil && *body.ComponentType != c.ComponentType {
		return errorf(http.StatusBadRequest, "Cannot change component %s from %s to %s; a component's type is fixed at creation", c.ComponentID, c.ComponentType, *body.ComponentType)
	}
	if !isJSONNull(body.Metadata) && !isJSONObject(body.Metadata) {
		return errorf(http.StatusUnprocessableEntity, "metadata must be an object")
	}
	if v := body.CurrentVersion; v != nil && (*v < 1 || *v > 1<<31-1) {
		return errorf(http.StatusUnprocessableEntity, "current_version must be a positive integer")
	}
	ctx := r.Context()
	if body.CurrentVersion != nil {
		out, err := d.SetCurrentVersion(ctx, c.ComponentID, *body.CurrentVersion)
		if errors.Is(err, db.ErrNotFound) {
			return errorf(http.StatusNotFound, "Component %s or config version %d not found", c.ComponentID, *body.CurrentVersion)
		}
		if err != nil {
			return componentErr(err)
		}
		c = out
	}
	if body.Name != nil || body.Description != nil || !isJSONNull(body.Metadata) {
		if c, err = d.UpdateComponent(ctx, c.ComponentID, db.ComponentPatch{Name: body.Name, Description: body.Description, Metadata: nullIfJSONNull(body.Metadata)}); err != nil {
			return componentErr(err)
		}
	}
	writeJSON(w, http.StatusOK, newComponentView(c))
	return nil
}

// deleteComponent is DELETE /components/{component_id}: it archives the
// component (Agno's soft delete); expected_current_version (query) or
// guard.current_version (body) must match when given.
func (s *Server) deleteComponent(w http.ResponseWriter, r *http.Request) error {
	d, c, err := s.loadWritable(r, "delete")
	if err != nil {
		return err
	}
	var expected *int
	if v := r.URL.Query().Get("expected_current_version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errorf(http.StatusUnprocessableEntity, "expected_current_version must be an integer")
		}
		expected = &n
	}
	var body struct {
		Guard *componentGuard `json:"guard"`
	}
	if err := decodeOptionalBody(r, &body); err != nil {
		return err
	}
	{
		if g := body.Guard; g != nil {
			if g.LatestVersion != nil {
				return errorf(http.StatusBadRequest, "This route checks guard.current_version only; guard.latest_version is not honoured here")
			}
			if g.CurrentVersion != nil {
				if expected != nil && *expected != *g.CurrentVersion {
					return errorf(http.StatusBadRequest, "Conflicting guards: expected_current_version and guard.current_version disagree. Send one.")
				}
				expected = g.CurrentVersion
			}
		}
	}
	if expected != nil && *expected != c.CurrentVersion {
		return errorf(http.StatusConflict, "Component %s current version changed; expected %d", c.ComponentID, *expected)
	}
	if err := d.ArchiveComponent(r.Context(), c.ComponentID); err != nil {
		return componentErr(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// decodeOptionalBody is decodeJSONBody where no body (or null) is allowed.
func decodeOptionalBody(r *http.Request, v any) error {
	if err := decodeJSONBody(r, v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// restoreComponent is POST /components/{component_id}/restore.
func (s *Server) restoreComponent(w http.ResponseWriter, r *http.Request) error {
	d, c, err := s.loadComponent(r, true)
	if err != nil {
		return err
	}
	if c.DeletedAt == 0 {
		return errorf(http.StatusConflict, "Component is not archived")
	}
	if err := requireWrite(r, c, "modify"); err != nil {
		return err
	}
	c, err = d.RestoreComponent(r.Context(), c.ComponentID)
	if err != nil {
		return componentErr(err)
	}
	writeJSON(w, http.StatusOK, newComponentView(c))
	return nil
}

// listConfigs is GET /components/{component_id}/configs; a caller who may
// not read the component's drafts sees its published versions only.
func (s *Server) listConfigs(w http.ResponseWriter, r *http.Request) error {
	d, c, err := s.loadComponent(r, false)
	if err != nil {
		return err
	}
	withConfig, err := boolQuery(r, "include_config", true)
	if err != nil {
		return err
	}
	list, err := d.ListConfigs(r.Context(), c.ComponentID)
	if err = s.leaveOutCorrupt(r.Context(), "list configs", err); err != nil {
		return err
	}
	drafts := mayReadDrafts(r, c)
	out := make([]configView, 0, len(list))
	for i := range list {
		if drafts || list[i].Stage == db.StagePublished {
			out = append(out, newConfigView(&list[i], withConfig))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// checkSetCurrent refuses a set_current the version's stage contradicts.
// As in Agno, a published version becomes current and a draft does not;
// set_current (Agno's schema has it, default true, and never reads it) is
// accepted absent, true (the default Agno's clients send, drafts included)
// or false for a draft. false for a published version would be ignored, so
// it is refused.
func checkSetCurrent(setCurrent *bool, stage *string) error {
	if setCurrent != nil && !*setCurrent && stage != nil && *stage == db.StagePublished {
		return errorf(http.StatusUnprocessableEntity, "set_current=false is not supported for a published version: publishing makes a version current; "+
			"create it as a draft to keep the current version")
	}
	return nil
}

type configBody struct {
	Config json.RawMessage `json:"config"`
	// Version is in Agno's ConfigCreate, which ignores it; a new version
	// always takes the next number, so a version given is refused.
	Version    *int            `json:"version"`
	Label      *string         `json:"label"`
	Stage      *string         `json:"stage"`
	Notes      *string         `json:"notes"`
	Links      []linkBody      `json:"links"`
	SetCurrent *bool           `json:"set_current"`
	Guard      *componentGuard `json:"guard"`
}

// createConfig is POST /components/{component_id}/configs: a new version
// (draft unless published; a published one becomes current).
func (s *Server) createConfig(w http.ResponseWriter, r *http.Request) error {
	d, c, err := s.loadWritable(r, "modify")
	if err != nil {
		return err
	}
	var body configBody
	if err := decodeJSONBody(r, &body); err != nil {
		return err
	}
	if isJSONNull(body.Config) {
		return errorf(http.StatusUnprocessableEntity, "config is required")
	}
	if body.Version != nil {
		return errorf(http.StatusUnprocessableEntity, "version is not supported: a new config always takes the next version number")
	}
	if err := checkSetCurrent(body.SetCurrent, body.Stage); err != nil {
		return err
	}
	if body.Guard != nil && body.Guard.CurrentVersion != nil {
		return errorf(http.StatusBadRequest, "This route checks guard.latest_version only; guard.current_version is not honoured here")
	}
	if body.Guard != nil && body.Guard.LatestVersion != nil {
		latest := 0
		if list, err := d.ListConfigs(r.Context(), c.ComponentID); err != nil {
			return err
		} else if len(list) > 0 {
			latest = list[0].Version
		}
		if latest != *body.Guard.LatestVersion {
			return errorf(http.StatusConflict, "Component %s latest version is %d, expected %d", c.ComponentID, latest, *body.Guard.LatestVersion)
		}
	}
	links, err := s.checkComponentConfig(r, c, body.Config, body.Links)
	if err != nil {
		return err
	}
	cfg, err := d.AddConfig(r.Context(), c.ComponentID, &db.ComponentConfig{Config: body.Config, Label: deref(body.Label), Stage: deref(body.Stage), Notes: deref(body.Notes)}, links)
	if err != nil {
		return componentErr(err)
	}
	writeJSON(w, http.StatusCreated, newConfigView(cfg, true))
	return nil
}

// patchConfig is PATCH /components/{component_id}/configs/{version}: drafts
// only; publishing one makes it current.
func (s *Server) patchConfig(w http.ResponseWriter, r *http.Request) error {
	d, c, version, err := s.loadWritableVersion(r, "modify")
	if err != nil {
		return err
	}
	var body configBody
	if err := decodeJSONBody(r, &body); err != nil {
		return err
	}
	// Not fields of Agno's ConfigUpdate: a version keeps its number, and
	// publishing it (stage) is what makes it current.
	if body.Version != nil || body.SetCurrent != nil {
		return errorf(http.StatusUnprocessableEntity, "version and set_current are not supported on a config update: publish the version (stage) to make it current")
	}
	if body.Guard != nil && body.Guard.CurrentVersion != nil {
		return errorf(http.StatusBadRequest, "This route checks guard.latest_version only; guard.current_version is not honoured here")
	}
	ctx := r.Context()
	cur, err := d.GetConfig(ctx, c.ComponentID, version)
	if errors.Is(err, db.ErrNotFound) {
		return errorf(http.StatusNotFound, "Config %s v%d not found", c.ComponentID, version)
	}
	if err != nil {
		return err
	}
	if body.Guard != nil && body.Guard.LatestVersion != nil {
		list, err := d.ListConfigs(ctx, c.ComponentID)
		if err != nil {
			return err
		}
		if len(list) == 0 || list[0].Version != *body.Guard.LatestVersion {
			return errorf(http.StatusConflict, "Component %s latest version is not %d", c.ComponentID, *body.Guard.LatestVersion)
		}
	}
	patch := db.ConfigPatch{Label: body.Label, Stage: body.Stage, Notes: body.Notes}
	raw := cur.Config
	if !isJSONNull(body.Config) {
		raw, patch.Config = body.Config, body.Config
	}
	if !isJSONNull(body.Config) || body.Links != nil {
		var explicit []linkBody
		if body.Links != nil {
			explicit = body.Links
		}
		links, err := s.checkComponentConfig(r, c, raw, explicit)
		if err != nil {
			return err
		}
		patch.Links, patch.SetLinks = links, true
	}
	cfg, err := d.UpdateConfig(ctx, c.ComponentID, version, patch)
	if err != nil {
		return componentErr(err)
	}
	writeJSON(w, http.StatusOK, newConfigView(cfg, true))
	return nil
}

// readConfig is a version the caller may read: a draft answers 404 to a
// caller who may not read the component's drafts (as if absent).
func (s *Server) readConfig(r *http.Request, current bool) (*db.Component, *db.ComponentConfig, error) {
	d, c, err := s.loadComponent(r, false)
	if err != nil {
		return nil, nil, err
	}
	// The current version; without one, the latest (as Agno's get_config).
	version := 0
	if !current {
		if version, err = versionParam(r); err != nil {
			return nil, nil, err
		}
	}
	cfg, err := d.GetConfig(r.Context(), c.ComponentID, version)
	if current && (errors.Is(err, db.ErrNotFound) || (err == nil && cfg.Stage != db.StagePublished && !mayReadDrafts(r, c))) {
		return nil, nil, errorf(http.StatusNotFound, "No current config for %s", c.ComponentID)
	}
	if errors.Is(err, db.ErrNotFound) || (err == nil && cfg.Stage != db.StagePublished && !mayReadDrafts(r, c)) {
		return nil, nil, errorf(http.StatusNotFound, "Config %s v%d not found", c.ComponentID, version)
	}
	if err != nil {
		return nil, nil, err
	}
	return c, cfg, nil
}

func (s *Server) getCurrentConfig(w http.ResponseWriter, r *http.Request) error {
	_, cfg, err := s.readConfig(r, true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newConfigView(cfg, true))
	return nil
}

func (s *Server) getConfigVersion(w http.ResponseWriter, r *http.Request) error {
	_, cfg, err := s.readConfig(r, false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newConfigView(cfg, true))
	return nil
}

// getConfigLinks is GET /components/{component_id}/configs/{version}/links
// (an Agentry addition: the version's agno_component_links rows).
func (s *Server) getConfigLinks(w http.ResponseWriter, r *http.Request) error {
	c, cfg, err := s.readConfig(r, false)
	if err != nil {
		return err
	}
	links, err := s.dbs[0].ListLinks(r.Context(), c.ComponentID, cfg.Version)
	if err = s.leaveOutCorrupt(r.Context(), "list links", err); err != nil {
		return err
	}
	out := make([]linkView, 0, len(links))
	for _, l := range links {
		out = append(out, linkView{ParentComponentID: l.ParentComponentID, ParentVersion: l.ParentVersion, LinkKind: l.LinkKind, LinkKey: l.LinkKey,
			ChildComponentID: l.ChildComponentID, ChildVersion: l.ChildVersion, Position: l.Position, Meta: l.Meta, CreatedAt: l.CreatedAt})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteConfig is DELETE /components/{component_id}/configs/{version}: it
// tombstones a draft (the number is never reused).
func (s *Server) deleteConfig(w http.ResponseWriter, r *http.Request) error {
	d, c, version, err := s.loadWritableVersion(r, "delete")
	if err != nil {
		return err
	}
	if err := d.DeleteConfig(r.Context(), c.ComponentID, version); err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return errorf(http.StatusNotFound, "Config %s v%d not found", c.ComponentID, version)
		}
		return componentErr(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// setCurrentConfig is POST /components/{component_id}/configs/{version}/set-current
// (rollback to a published version); the body's guard is optional.
func (s *Server) setCurrentConfig(w http.ResponseWriter, r *http.Request) error {
	d, c, version, err := s.loadWritableVersion(r, "modify")
	if err != nil {
		return err
	}
	var body struct {
		Guard *componentGuard `json:"guard"`
	}
	if err := decodeOptionalBody(r, &body); err != nil {
		return err
	}
	{
		if g := body.Guard; g != nil {
			if g.LatestVersion != nil {
				return errorf(http.StatusBadRequest, "This route checks guard.current_version only; guard.latest_version is not honoured here")
			}
			if g.CurrentVersion != nil && *g.CurrentVersion != c.CurrentVersion {
				return errorf(http.StatusConflict, "Component %s current version is %d, expected %d", c.ComponentID, c.CurrentVersion, *g.CurrentVersion)
			}
		}
	}
	out, err := d.SetCurrentVersion(r.Context(), c.ComponentID, version)
	if errors.Is(err, db.ErrNotFound) {
		return errorf(http.StatusNotFound, "Component %s or config version %d not found", c.ComponentID, version)
	}
	if err != nil {
		return componentErr(err)
	}
	writeJSON(w, http.StatusOK, newComponentView(out))
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func isJSONNull(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return t == "" || t == "null"
}

func nullIfJSONNull(raw json.RawMessage) json.RawMessage {
	if isJSONNull(raw) {
		return nil
	}
	return raw
}
