package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentryhq/agentry/codemode"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// addTeamDBs registers the databases of a team, its members and its member
// teams (nested).
func addTeamDBs(t *team.Team, addDB func(*db.DB) error) error {
	if err := addDB(t.DB()); err != nil {
		return err
	}
	for _, m := range t.Members() {
		if err := addDB(m.DB()); err != nil {
			return err
		}
	}
	for _, sub := range t.Teams() {
		if err := addTeamDBs(sub, addDB); err != nil {
			return err
		}
	}
	return nil
}

// addTeamsAndWorkflows indexes the configured teams and workflows (ids unique
// within each kind) and registers their databases, their members' and their
// steps'.
func (s *Server) addTeamsAndWorkflows(addDB func(*db.DB) error) error {
	for i, t := range s.cfg.Teams {
		if t == nil {
			return fmt.Errorf("agentos: Teams[%d] is nil", i)
		}
		if _, dup := s.teams[t.ID()]; dup {
			return fmt.Errorf("agentos: two teams share id %q", t.ID())
		}
		s.teams[t.ID()] = t
		if err := addTeamDBs(t, addDB); err != nil {
			return err
		}
	}
	for i, w := range s.cfg.Workflows {
		if w == nil {
			return fmt.Errorf("agentos: Workflows[%d] is nil", i)
		}
		if _, dup := s.workflows[w.ID()]; dup {
			return fmt.Errorf("agentos: two workflows share id %q", w.ID())
		}
		s.workflows[w.ID()] = w
		if err := addDB(w.DB()); err != nil {
			return err
		}
		for _, r := range w.Runners() {
			if err := addDB(r.DB()); err != nil {
				return err
			}
		}
	}
	return nil
}

// Stored components: agents, teams and workflows kept in the default
// database's component registry (the /components routes) and served by the
// run routes next to the configured ones, without a restart. A stored
// component is built from its config by the config file's builder
// (agentos/config), once per config version: a run resolves the version
// current when it starts and keeps the component it was built from, so
// moving the current version changes later runs, never one in flight.
// Configured components win over stored ones of the same kind and id (the
// routes refuse to create such ids).

// ComponentsConfig configures stored components.
type ComponentsConfig struct {
	// Build are the options stored components are built with; a zero
	// MediaStorage takes Config.MediaStorage.
	Build config.BuildOptions
	// Policy limits the model providers and built-in tools stored configs
	// may name (config.ComponentPolicy has the defaults).
	Policy config.ComponentPolicy
}

// maxStoredBuilds bounds the built components kept; past it the cache
// starts over (runs in flight keep what they hold).
const maxStoredBuilds = 512

// storedComponents caches built stored components by kind, id, version and
// the version's updated_at (drafts are edited in place).
type storedComponents struct {
	mu       sync.Mutex
	built    map[string]runTarget
	versions map[runTarget]int // the config version each was built from
}

func (c *storedComponents) get(key string) (runTarget, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.built[key]
	return t, ok
}

func (c *storedComponents) put(key string, t runTarget, version int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built == nil || len(c.built) >= maxStoredBuilds {
		c.built, c.versions = map[string]runTarget{}, map[runTarget]int{}
	}
	c.built[key] = t
	c.versions[t] = version
}

// versionOf is the config version t, a stored component, was built from;
// false for a component of the config file (or one evicted since).
func (c *storedComponents) versionOf(t runTarget) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.versions[t]
	return v, ok
}

// componentDB is the database holding the component registry: the default
// one, when its driver stores components.
func (s *Server) componentDB() (*db.DB, error) {
	if len(s.dbs) == 0 {
		return nil, errorf(http.StatusNotFound, "No database is configured")
	}
	if !s.dbs[0].SupportsComponents() {
		return nil, errorf(http.StatusNotImplemented, "the %s database does not store components; use SQLite, Postgres or MySQL", s.dbs[0].Driver().Dialect())
	}
	return s.dbs[0], nil
}

// configured reports whether a configured (not stored) component of kind has id.
func (s *Server) configured(kind, id string) bool {
	switch kind {
	case db.ComponentAgent:
		_, ok := s.agents[id]
		return ok
	case db.ComponentTeam:
		_, ok := s.teams[id]
		return ok
	case db.ComponentWorkflow:
		_, ok := s.workflows[id]
		return ok
	}
	return false
}

// withStored resolves the URL's {param} for the run routes and calls h: the
// configured component, else the stored one visible to the caller; 404 with
// detail for neither.
func (s *Server) withStored(kind, param, detail string, configured func(string) (runTarget, bool), h targetHandler) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id := chi.URLParam(r, param)
		if t, ok := configured(id); ok {
			return h(w, r, t)
		}
		t, err := s.storedTarget(r.Context(), kind, id)
		if errors.Is(err, db.ErrNotFound) {
			return errorf(http.StatusNotFound, "%s", detail)
		}
		if err != nil {
			return err
		}
		return h(w, r, t)
	}
}

// storedTarget builds (or takes from the cache) the stored component of
// kind and id visible to ctx's user, at its current version (the latest
// when none is published: only its owner, or anyone for a shared one, sees
// such a component). ErrNotFound when there is none.
func (s *Server) storedTarget(ctx context.Context, kind, id string) (runTarget, error) {
	return s.storedTargetAt(ctx, kind, id, 0)
}

// storedTargetAt is storedTarget at config version (0: the current one), as
// a queued run recorded it.
func (s *Server) storedTargetAt(ctx context.Context, kind, id string, version int) (runTarget, error) {
	if len(s.dbs) == 0 || !s.dbs[0].SupportsComponents() {
		return nil, db.ErrNotFound
	}
	d := s.dbs[0]
	c, err := d.GetComponent(ctx, id, false)
	if err != nil {
		return nil, err
	}
	if c.ComponentType != kind {
		return nil, fmt.Errorf("%w: %s %s", db.ErrNotFound, kind, id)
	}
	if version == 0 {
		version = c.CurrentVersion
	}
	cfg, err := d.GetConfig(ctx, id, version)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s/%s@%d.%d", kind, id, cfg.Version, cfg.UpdatedAt)
	if t, ok := s.stored.get(key); ok {
		return t, nil
	}
	links, err := d.ListLinks(ctx, id, cfg.Version)
	if err != nil {
		return nil, err
	}
	t, err := s.buildStored(ctx, c, cfg.Config, links, nil)
	if err != nil {
		// Configs are checked when written; one that no longer builds (a
		// member archived since, a provider key removed) fails this run.
		return nil, fmt.Errorf("agentos: stored %s %s v%d: %w", kind, id, cfg.Version, err)
	}
	s.stored.put(key, t, cfg.Version)
	return t, nil
}

// componentBuildOptions are the options stored components are built with.
func (s *Server) componentBuildOptions() config.BuildOptions {
	o := s.cfg.Components.Build
	if o.MediaStorage == nil {
		o.MediaStorage = s.cfg.MediaStorage
	}
	caller := o.OnCodeMode
	o.OnCodeMode = func(cm *codemode.CodeMode) {
		s.codeModes.add(cm, true)
		if caller != nil {
			caller(cm)
		}
	}
	return o
}

// buildStored builds component c from raw, resolving the agents and teams
// it names: configured ones first, then stored ones at the version links
// pins (else their current one). stack holds the components being built
// (a stored component cannot contain itself).
func (s *Server) buildStored(ctx context.Context, c *db.Component, raw json.RawMessage, links []db.ComponentLink, stack []string) (runTarget, error) {
	if slices.Contains(stack, c.ComponentID) {
		return nil, fmt.Errorf("%w: %s contains itself (%s)", db.ErrComponentCycle, c.ComponentID, strings.Join(append(stack, c.ComponentID), " → "))
	}
	if len(stack) > team.MaxNestingDepth {
		return nil, fmt.Errorf("%w: components nest deeper than %d levels", config.ErrComponentConfig, team.MaxNestingDepth)
	}
	stack = append(stack, c.ComponentID)
	d, opts, policy := s.dbs[0], s.componentBuildOptions(), s.cfg.Components.Policy
	switch c.ComponentType {
	case db.ComponentAgent:
		a, err := config.ParseAgentComponent(raw, policy)
		if err != nil {
			return nil, err
		}
		if err := sameID(&a.ID, c.ComponentID); err != nil {
			return nil, err
		}
		if a.Name == "" {
			a.Name = c.Name
		}
		built, err := a.BuildWith(d, opts)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", config.ErrComponentConfig, err)
		}
		return built, nil
	case db.ComponentTeam:
		t, err := config.ParseTeamComponent(raw, policy)
		if err != nil {
			return nil, err
		}
		if err := sameID(&t.ID, c.ComponentID); err != nil {
			return nil, err
		}
		if t.Name == "" {
			t.Name = c.Name
		}
		agents, teams, _, err := s.resolveMembers(ctx, t.Members, links, stack, false)
		if err != nil {
			return nil, err
		}
		built, err := t.Build(d, agents, opts, teams)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", config.ErrComponentConfig, err)
		}
		return built, nil
	case db.ComponentWorkflow:
		w, err := config.ParseWorkflowComponent(raw, policy)
		if err != nil {
			return nil, err
		}
		if err := sameID(&w.ID, c.ComponentID); err != nil {
			return nil, err
		}
		if w.Name == "" {
			w.Name = c.Name
		}
		agents, teams, workflows, err := s.resolveMembers(ctx, stepRefs(w.Steps), links, stack, true)
		if err != nil {
			return nil, err
		}
		built, err := w.BuildNested(d, agents, teams, workflows, opts)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", config.ErrComponentConfig, err)
		}
		return built, nil
	}
	return nil, fmt.Errorf("%w: component_type %q", config.ErrComponentConfig, c.ComponentType)
}

// sameID sets a declaration's id to the component's; a config naming
// another id is refused.
func sameID(declared *string, id string) error {
	if *declared != "" && *declared != id {
		return fmt.Errorf("%w: the config's id %q is not the component's id %q", config.ErrComponentConfig, *declared, id)
	}
	*declared = id
	return nil
}

// stepRefs lists the agent, team and workflow ids a workflow's steps name,
// in order.
func stepRefs(steps []config.WorkflowStep) []string {
	var out []string
	var walk func([]config.WorkflowStep)
	walk = func(steps []config.WorkflowStep) {
		for _, st := range steps {
			if st.Agent != "" {
				out = append(out, st.Agent)
			}
			if st.Team != "" {
				out = append(out, st.Team)
			}
			if st.Workflow != "" {
				out = append(out, st.Workflow)
			}
			if st.Steps != nil {
				walk(st.Steps.Steps)
			}
			if st.Parallel != nil {
				walk(st.Parallel.Steps)
			}
			if st.Loop != nil {
				walk(st.Loop.Steps)
			}
			if st.Condition != nil {
				walk(st.Condition.Steps)
				walk(st.Condition.Else)
			}
			if st.Router != nil {
				walk(st.Router.Choices)
			}
		}
	}
	walk(steps)
	return out
}

// resolveMembers builds the agents, teams and (for a workflow's steps,
// withWorkflows) workflows ids name: configured ones, or stored ones
// visible to ctx's user at the version links pins. An id on stack (a
// component being built) is a cycle: db.ErrComponentCycle.
func (s *Server) resolveMembers(ctx context.Context, ids []string, links []db.ComponentLink, stack []string, withWorkflows bool) (
	map[string]*agent.Agent, map[string]*team.Team, map[string]*workflow.Workflow, error) {
	agents, teams, workflows := map[string]*agent.Agent{}, map[string]*team.Team{}, map[string]*workflow.Workflow{}
	for _, id := range ids {
		if _, done := agents[id]; done {
			continue
		}
		if _, done := teams[id]; done {
			continue
		}
		if _, done := workflows[id]; done {
			continue
		}
		if slices.Contains(stack, id) {
			return nil, nil, nil, fmt.Errorf("%w: %s contains itself (%s)", db.ErrComponentCycle, id, strings.Join(append(slices.Clip(stack), id), " → "))
		}
		if a, ok := s.agents[id]; ok {
			agents[id] = a
			continue
		}
		if t, ok := s.teams[id]; ok {
			teams[id] = t
			continue
		}
		if w, ok := s.workflows[id]; ok && withWorkflows {
			workflows[id] = w
			continue
		}
		t, err := s.buildChild(ctx, id, links, stack)
		if err != nil {
			return nil, nil, nil, err
		}
		switch x := t.(type) {
		case *agent.Agent:
			agents[id] = x
		case *team.Team:
			teams[id] = x
		case *workflow.Workflow:
			if !withWorkflows {
				return nil, nil, nil, fmt.Errorf("%w: %s is a workflow; a team's members are agents and teams", config.ErrComponentConfig, id)
			}
			workflows[id] = x
		default:
			return nil, nil, nil, fmt.Errorf("%w: %s is not an agent, team or workflow", config.ErrComponentConfig, id)
		}
	}
	return agents, teams, workflows, nil
}

// buildChild builds the stored component id at the version links pins
// (else its current, or latest, one).
func (s *Server) buildChild(ctx context.Context, id string, links []db.ComponentLink, stack []string) (runTarget, error) {
	d := s.dbs[0]
	c, err := d.GetComponent(ctx, id, false)
	if errors.Is(err, db.ErrNotFound) {
		return nil, fmt.Errorf("%w: no agent, team or workflow with id %q (configured or stored)", config.ErrComponentConfig, id)
	}
	if err != nil {
		return nil, err
	}
	version := c.CurrentVersion
	for _, l := range links {
		if l.ChildComponentID == id && slices.Contains(db.PinLinkKinds, l.LinkKind) {
			version = l.ChildVersion
			break
		}
	}
	cfg, err := d.GetConfig(ctx, id, version)
	if errors.Is(err, db.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s v%d does not exist", config.ErrComponentConfig, id, version)
	}
	if err != nil {
		return nil, err
	}
	childLinks, err := d.ListLinks(ctx, id, cfg.Version)
	if err != nil {
		return nil, err
	}
	return s.buildStored(ctx, c, cfg.Config, childLinks, stack)
}

// maxListedComponents bounds the stored components GET /agents (/teams,
// /workflows) lists after the configured ones.
const maxListedComponents = 500

// storedTargets are the stored components of kind the caller sees (its own
// and shared ones, under isolation), at their current versions, leaving
// out ids the config file serves; one that no longer builds is logged and
// left out. Nil without a component registry.
func (s *Server) storedTargets(ctx context.Context, kind string) []runTarget {
	if len(s.dbs) == 0 || !s.dbs[0].SupportsComponents() {
		return nil
	}
	list, _, err := s.dbs[0].ListComponents(ctx, db.ComponentFilter{ComponentType: kind, Limit: maxListedComponents, Page: 1})
	if err = s.leaveOutCorrupt(ctx, "list stored components", err); err != nil {
		s.log.WarnContext(ctx, "agentos: list stored components", "component_type", kind, "err", err)
		return nil
	}
	var out []runTarget
	for i := range list {
		if s.configured(kind, list[i].ComponentID) {
			continue
		}
		if t := s.storedOne(ctx, kind, list[i].ComponentID); t != nil {
			out = append(out, t)
		}
	}
	return out
}

// storedOne is the stored component kind/id the caller sees, or nil (none,
// or it does not build: logged).
func (s *Server) storedOne(ctx context.Context, kind, id string) runTarget {
	t, err := s.storedTarget(ctx, kind, id)
	if err != nil {
		if !errors.Is(err, db.ErrNotFound) {
			s.log.WarnContext(ctx, "agentos: a stored component does not build", "component_type", kind, "component_id", id, "err", err)
		}
		return nil
	}
	return t
}
