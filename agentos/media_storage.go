package agentos

import (
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/media"
)

// mediaStorageFor is where a session's media are: the storage of the
// agent, team or workflow the session belongs to when it has one of its
// own (a component media_storage), else the server's.
func (s *Server) mediaStorageFor(sess *db.Session) media.Storage {
	switch {
	case sess.AgentID != "":
		for _, a := range s.cfg.Agents {
			if a.ID() == sess.AgentID && a.Config().MediaStorage != nil {
				return a.Config().MediaStorage
			}
		}
	case sess.TeamID != "":
		for _, t := range s.cfg.Teams {
			if t.ID() == sess.TeamID && t.Config().MediaStorage != nil {
				return t.Config().MediaStorage
			}
		}
	case sess.WorkflowID != "":
		for _, w := range s.cfg.Workflows {
			if w.ID() == sess.WorkflowID && w.Config().MediaStorage != nil {
				return w.Config().MediaStorage
			}
		}
	}
	return s.cfg.MediaStorage
}
