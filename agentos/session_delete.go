package agentos

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/run"
)

// errSessionDeleted cancels the runs of a session being deleted.
var errSessionDeleted = errors.New("the run's session is being deleted")

// detailRunsStopping is the 503's detail when a run of a session being
// deleted did not stop in time.
const detailRunsStopping = "a run of the session did not stop in time; nothing was deleted; send the same request again"

// Deleting a session first stops the session's runs executing in this
// process (and waits until they are stored: a run that ends after the
// delete would store its session again), then deletes its rows (session,
// runs, jobs, runs' events, traces, offloaded tool results and their files)
// in one database transaction, then its media objects (media.DeleteSession)
// from every media storage the server knows. A durable run executing on
// another replica is fenced by its job row's deletion.
// Storage is not part of the transaction: when it fails after the commit,
// the deletion is retried a few times within the request, and if it still
// fails the request answers 503 and the session is remembered as pending,
// so that the same DELETE sent again (the session row is gone by then)
// finishes the job instead of answering 404. See
// docs/adr/session-delete-media.md.

// mediaDeleteBackoff is the wait before each retry of a session's media
// deletion within one request (tests shorten it).
var mediaDeleteBackoff = []time.Duration{50 * time.Millisecond, 250 * time.Millisecond}

// detailMediaLeft is the 503's detail when the media could not be deleted.
const detailMediaLeft = "the session was deleted, but its media could not be removed from storage; send the same request again to finish"

// pendingMedia remembers sessions whose rows are deleted but whose media
// are not (yet): (database id, session id) → owner (user id, "" for none)
// and the objects of the older layout its runs referenced (legacyMedia:
// the runs are gone, the list cannot be read again).
type pendingMedia struct {
	mu       sync.Mutex
	sessions map[pendingKey]pendingEntry
}

type pendingKey struct{ db, session string }

type pendingEntry struct {
	owner  string
	legacy []media.Reference
}

func (p *pendingMedia) add(dbID, sessionID, owner string, legacy []media.Reference) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions == nil {
		p.sessions = map[pendingKey]pendingEntry{}
	}
	p.sessions[pendingKey{dbID, sessionID}] = pendingEntry{owner, legacy}
}

func (p *pendingMedia) owner(dbID, sessionID string) (pendingEntry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.sessions[pendingKey{dbID, sessionID}]
	return e, ok
}

func (p *pendingMedia) done(dbID, sessionID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.sessions, pendingKey{dbID, sessionID})
}

// mediaStorages lists every distinct media storage of the server and its
// components: a session's media are under its owner's directory in
// whichever of them its component (or a team's member) wrote to.
func (s *Server) mediaStorages() []media.Storage {
	var out []media.Storage
	add := func(m media.Storage) {
		if m == nil {
			return
		}
		if reflect.TypeOf(m).Comparable() {
			for _, o := range out {
				if reflect.TypeOf(o) == reflect.TypeOf(m) && o == m {
					return
				}
			}
		}
		out = append(out, m)
	}
	add(s.cfg.MediaStorage)
	for _, a := range s.cfg.Agents {
		add(a.Config().MediaStorage)
	}
	for _, t := range s.cfg.Teams {
		add(t.Config().MediaStorage)
	}
	for _, w := range s.cfg.Workflows {
		add(w.Config().MediaStorage)
	}
	return out
}

// deleteSessionMedia deletes a session's media from every storage (its
// owner's directory, and the objects of the older layout legacy lists that
// each storage made) and its CodeMode interpreters and saved states
// (forgetCodeMode), retrying with mediaDeleteBackoff. The request's
// cancellation does not stop it: the rows are gone already.
func (s *Server) deleteSessionMedia(ctx context.Context, o media.Owner, legacy []media.Reference) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	for attempt := 0; ; attempt++ {
		err = s.forgetCodeMode(ctx, o)
		for _, m := range s.mediaStorages() {
			var keys []string
			for _, ref := range legacy {
				if ref.StorageBackend == m.Backend() && ref.Bucket == m.Bucket() {
					keys = append(keys, ref.StorageKey)
				}
			}
			err = errors.Join(err, media.DeleteSession(ctx, m, o, keys...))
		}
		if err == nil || attempt == len(mediaDeleteBackoff) {
			return err
		}
		time.Sleep(mediaDeleteBackoff[attempt])
	}
}

// deleteSessions deletes sessions the caller owns (already checked) and
// then their media. Sessions whose media could not be deleted are logged,
// remembered as pending and make the answer a 503.
func (s *Server) deleteSessions(ctx context.Context, d *db.DB, sessions []*db.Session) error {
	if len(sessions) == 0 {
		return nil
	}
	if err := s.stopSessionRuns(ctx, d, sessions); err != nil {
		return err
	}
	ids := make([]string, len(sessions))
	legacy := make([][]media.Reference, len(sessions))
	for i, sess := range sessions {
		ids[i] = sess.SessionID
		// Read before the rows go: the runs name them.
		var err error
		if legacy[i], err = legacyMedia(ctx, d, sess.SessionID); err != nil {
			return err
		}
	}
	if err := d.DeleteSessions(ctx, ids...); err != nil {
		return err
	}
	return s.finishMedia(ctx, d.ID, sessions, legacy)
}

// finishMedia deletes the media of deleted sessions (legacy[i]: the
// older layout's objects the runs of sessions[i] referenced); see
// deleteSessions.
func (s *Server) finishMedia(ctx context.Context, dbID string, sessions []*db.Session, legacy [][]media.Reference) error {
	var failed error
	for i, sess := range sessions {
		o := media.Owner{DB: dbID, User: sess.UserID, Session: sess.SessionID}
		err := s.deleteSessionMedia(ctx, o, legacy[i])
		if err == nil {
			s.mediaLeft.done(dbID, sess.SessionID)
			continue
		}
		s.mediaLeft.add(dbID, sess.SessionID, sess.UserID, legacy[i])
		s.log.ErrorContext(ctx, "session deleted but its media were not", "db_id", dbID, "session_id", sess.SessionID,
			"media_dir", o.Dir(), "older_objects", len(legacy[i]), "err", err)
		failed = errors.Join(failed, err)
	}
	if failed != nil {
		return &httpError{Status: http.StatusServiceUnavailable, Detail: detailMediaLeft, Err: failed}
	}
	return nil
}

// pendingSession returns the session a DELETE of a missing id may finish,
// with the older layout's objects its runs referenced: one deleted earlier
// by a request whose media deletion failed, owned by
// the caller, and not stored again since (by anyone: the existence check
// is unscoped, as a new session of that id owns its media directory).
func (s *Server) pendingSession(r *http.Request, d *db.DB, sessionID string) (*db.Session, []media.Reference, bool, error) {
	e, ok := s.mediaLeft.owner(d.ID, sessionID)
	if !ok || !actAs(r.Context(), r.URL.Query().Get("user_id")).owns(e.owner) {
		return nil, nil, false, nil
	}
	_, err := d.GetSession(context.Background(), sessionID)
	switch {
	case err == nil:
		s.mediaLeft.done(d.ID, sessionID)
		return nil, nil, false, nil
	case !errors.Is(err, db.ErrNotFound):
		return nil, nil, false, err
	}
	return &db.Session{SessionID: sessionID, UserID: e.owner}, e.legacy, true, nil
}

// stopSessionRuns cancels the runs of sessions that execute in this
// process (found through their stored PENDING or RUNNING rows and the
// snapshots of runs whose session is not stored yet) and waits until they
// returned and stored their end, up to cancelTimeout: then a 503, and
// nothing is deleted. Runs that execute in another process cannot be
// reached: durable ones are fenced by the deletion of their job rows.
func (s *Server) stopSessionRuns(ctx context.Context, d *db.DB, sessions []*db.Session) error {
	var execs []run.Execution
	seen := map[string]bool{}
	add := func(runID string) {
		if seen[runID] {
			return
		}
		seen[runID] = true
		if e, ok := s.runs.reg.Lookup(runID); ok {
			execs = append(execs, e)
		}
	}
	const page = 500
	for _, sess := range sessions {
		for _, o := range s.runs.inSession(sess.SessionID, func(*run.Output, string) bool { return true }) {
			add(o.RunID)
		}
		for p := 1; ; p++ {
			runs, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: sess.SessionID, Statuses: []run.Status{run.StatusPending, run.StatusRunning},
				Limit: page, Page: p})
			if err != nil {
				return err
			}
			for _, r := range runs {
				add(r.RunID)
			}
			if len(runs) < page {
				break
			}
		}
	}
	if len(execs) == 0 {
		return nil
	}
	for _, e := range execs {
		e.Cancel(errSessionDeleted)
	}
	timeout := time.NewTimer(s.cancelTimeout)
	defer timeout.Stop()
	for _, e := range execs {
		select {
		case <-e.Done():
		case <-timeout.C:
			return &httpError{Status: http.StatusServiceUnavailable, Detail: detailRunsStopping}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}
