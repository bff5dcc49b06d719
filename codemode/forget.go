package codemode

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

// ForgetSession forgets what CodeMode holds of session on behalf of user,
// the session's owner ("" for a session without a user), as when the
// session is deleted: its interpreter is dropped (a running cell is
// aborted, and nothing it would still save is written), its saved state is
// deleted, and so is user's latest state when this session saved it, so
// that no new session of user starts from the deleted one's variables.
// What another owner holds under the same session id (interpreter or saved
// state) is left as it is, and forgetting a session CodeMode never saw is
// not an error. It works after Close too (the saved state is deleted).
//
// The user's latest state is deleted, not rolled back to an earlier
// session's (only the latest is kept): the user's next new session starts
// empty.
func (cm *CodeMode) ForgetSession(ctx context.Context, session, user string) error {
	cm.mu.Lock()
	k := cm.kernels[session]
	if k != nil && mayUse(k.owner, user) {
		delete(cm.kernels, session)
		k.gone = true
		if k.idle != nil {
			k.idle.Stop()
		}
		delete(cm.evicted, session)
	} else {
		k = nil
	}
	cm.mu.Unlock()
	if k != nil {
		k.interruptRunning(ReasonCancelled)
		k.stopSaving()
	}
	if cm.cfg.DB == nil {
		return nil
	}
	doc, unreadable, err := cm.readForForget(ctx, sessionPath(session))
	if err != nil {
		return err
	}
	// A session's state that cannot be read is deleted unless it names
	// another owner: nothing of it could be restored.
	if doc != nil && (doc.Owner == user || unreadable && doc.Owner == "") {
		if err := cm.cfg.DB.DeleteFile(ctx, cm.cfg.Namespace, sessionPath(session)); err != nil {
			return fmt.Errorf("codemode: deleting the saved state of session %s: %w", session, err)
		}
	}
	if user == "" {
		return nil // no latest state is kept for runs without a user
	}
	// The user's latest state names the session that saved it. One that
	// cannot be read is left: it is never restored, and which session saved
	// it cannot be told.
	doc, unreadable, err = cm.readForForget(ctx, userPath(user))
	if err != nil || doc == nil || unreadable || doc.Owner != user || doc.Session != session {
		return err
	}
	// Another session of user saving between the read and this delete loses
	// its copy as the latest (not its own state): its next save writes it
	// again.
	if err := cm.cfg.DB.DeleteFile(ctx, cm.cfg.Namespace, userPath(user)); err != nil {
		return fmt.Errorf("codemode: deleting the latest saved state of user %s: %w", user, err)
	}
	return nil
}

// readForForget reads the snapshot at path without the warning a run logs:
// nil when there is none; unreadable with what decodeSnapshot could read.
func (cm *CodeMode) readForForget(ctx context.Context, path string) (doc *snapshotDoc, unreadable bool, err error) {
	f, err := cm.cfg.DB.GetFile(ctx, cm.cfg.Namespace, path)
	if errors.Is(err, db.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("codemode: reading the saved state: %w", err)
	}
	doc, err = decodeSnapshot(f.Content)
	return doc, err != nil, nil
}

// DB is the database the CodeMode saves sessions in (Config.DB; nil when
// it saves none): a session deleted from that database is the one to
// forget.
func (cm *CodeMode) DB() *db.DB { return cm.cfg.DB }
