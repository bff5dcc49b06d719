package dbtest

import (
	"context"
	"sync"

	"github.com/agentryhq/agentry/db"
)

// ReadHook is a real driver whose next GetSession of a session runs a
// hook after the read, once per Arm: another process writing the row
// between a reader's read and its write. Only the Driver interface is
// passed through (the optional abilities of the driver it wraps are not),
// so it fits tests of a reader's read-and-write, not of a driver's fast
// paths.
type ReadHook struct {
	db.Driver
	mu   sync.Mutex
	id   string
	hook func()
}

// Arm makes the next GetSession of session id run hook after its read.
func (h *ReadHook) Arm(id string, hook func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.id, h.hook = id, hook
}

// GetSession reads the session, then runs the armed hook if it is for id.
func (h *ReadHook) GetSession(ctx context.Context, id string) (*db.Session, error) {
	s, err := h.Driver.GetSession(ctx, id)
	h.mu.Lock()
	hook := h.hook
	if id != h.id {
		hook = nil
	}
	if hook != nil {
		h.hook = nil
	}
	h.mu.Unlock()
	if hook != nil {
		hook()
	}
	return s, err
}
