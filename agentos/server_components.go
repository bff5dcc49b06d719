package agentos

import (
	"fmt"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/team"
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
