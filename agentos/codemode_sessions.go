package agentos

import (
	"context"
	"errors"
	"sync"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/media"
)

// codeModes are the CodeModes whose sessions the server deletes with
// their sessions: Config.CodeModes (closed by the caller) and those of the
// stored components the server built (owned: closed at Close).
type codeModes struct {
	mu    sync.Mutex
	all   []*codemode.CodeMode
	owned []*codemode.CodeMode
}

func (c *codeModes) add(cm *codemode.CodeMode, owned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, cm)
	if owned {
		c.owned = append(c.owned, cm)
	}
}

// on lists the CodeModes that save their sessions in the database dbID.
func (c *codeModes) on(dbID string) []*codemode.CodeMode {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*codemode.CodeMode
	for _, cm := range c.all {
		if d := cm.DB(); d != nil && d.ID == dbID {
			out = append(out, cm)
		}
	}
	return out
}

func (c *codeModes) closeOwned() {
	c.mu.Lock()
	owned := c.owned
	c.owned = nil
	c.mu.Unlock()
	for _, cm := range owned {
		_ = cm.Close()
	}
}

// forgetCodeMode drops the deleted session's interpreters and saved
// states in every CodeMode on its database (a team's members run in the
// team's session, each with its own CodeMode): those of the session's
// owner, not another user's of the same id.
func (s *Server) forgetCodeMode(ctx context.Context, o media.Owner) error {
	var err error
	for _, cm := range s.codeModes.on(o.DB) {
		err = errors.Join(err, cm.ForgetSession(ctx, o.Session, o.User))
	}
	return err
}
