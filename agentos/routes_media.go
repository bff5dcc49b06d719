package agentos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/run"
)

// getSessionMedia serves offloaded media (AGENTOS-WIRE.md): GET
// /sessions/{session_id}/media/{key} streams the object, or redirects to a
// fresh signed URL when the storage signs, only when the session is the
// caller's (user isolation) and the object is the session's: stored under
// the session's owner (its database, user and id: media.Owner), or named by
// a reference in one of the session's runs (objects stored before owners,
// under the session id alone, which the same id in another database or of
// another user shared). 404 otherwise.
func (s *Server) getSessionMedia(w http.ResponseWriter, r *http.Request) error {
	notFound := errorf(http.StatusNotFound, "Media not found")
	d, sess, err := s.loadSession(r)
	if err != nil {
		return err
	}
	st := s.mediaStorageFor(sess)
	if st == nil {
		return notFound
	}
	name := chi.URLParam(r, "key")
	key, err := media.Owner{DB: d.ID, User: sess.UserID, Session: sess.SessionID}.Key(name)
	if err != nil {
		return notFound
	}
	ok, err := st.Exists(r.Context(), key)
	if err != nil {
		return err
	}
	if !ok {
		ref, err := referencedMedia(r.Context(), d, sess.SessionID, st, name)
		if err != nil {
			return err
		}
		if ref == nil {
			return notFound
		}
		key = ref.StorageKey
		ok, err = st.Exists(r.Context(), key)
		if errors.Is(err, media.ErrInvalidKey) || (err == nil && !ok) {
			return notFound
		}
		if err != nil {
			return err
		}
	}
	if u, err := st.URL(r.Context(), key, 0); err == nil && u != "" {
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, u, http.StatusFound)
		return nil
	}
	body, err := st.Download(r.Context(), key)
	if errors.Is(err, media.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	defer body.Close()
	ctype := mime.TypeByExtension(path.Ext(key))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !media.Inline(ctype) {
		// The extension comes from the client's file name or type: HTML,
		// SVG or XML shown inline would run its scripts in the server's
		// origin.
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(key)}))
	}
	w.Header().Set("Cache-Control", "private, max-age=3600, immutable")
	if _, err := io.Copy(w, body); err != nil {
		s.log.WarnContext(r.Context(), "media: stream interrupted", "key", key, "err", err)
	}
	return nil
}

// referencedMedia finds the reference to the object name in the runs of
// session that the context's scope reads (user isolation), made by st
// (same backend and bucket); nil when no run references it. Only the
// places the agent writes references are read (message parts, the input's
// and the run's media, member runs): a client's text holding a reference's
// JSON is not one. A reference is taken only when its key is one the run
// itself could have stored: under the run's owner (its database, user and
// session: media.Owner) or, from before owners, under the session id
// (media.SessionDir). A client's media object sent with a url keeps its
// unknown members, a media_reference among them, in the run's input: one
// naming another owner's key reads nothing.
func referencedMedia(ctx context.Context, d *db.DB, session string, st media.Storage, name string) (*media.Reference, error) {
	var found *media.Reference
	legacy := media.SessionDir(session)
	err := eachRunHolding(ctx, d, session, []byte(name), func(out *run.Output) bool {
		own := media.Owner{DB: d.ID, User: out.UserID, Session: session}.Dir()
		found = findReference(out, st, name, func(key string) bool {
			return (strings.HasPrefix(key, own) || strings.HasPrefix(key, legacy)) && media.CheckKey(key) == nil
		})
		return found == nil
	})
	return found, err
}

// eachRunHolding calls fn with each run of session (read in the context's
// scope, a page at a time) whose run_data holds needle and decodes, until
// fn returns false.
func eachRunHolding(ctx context.Context, d *db.DB, session string, needle []byte, fn func(*run.Output) bool) error {
	const page = 100
	f := db.RunFilter{SessionID: session, Limit: page, Page: 1}
	for {
		runs, _, err := d.GetRuns(ctx, f)
		if err != nil {
			return err
		}
		for i := range runs {
			if !bytes.Contains(runs[i].RunData, needle) {
				continue
			}
			var out run.Output
			if json.Unmarshal(runs[i].RunData, &out) != nil {
				continue
			}
			if !fn(&out) {
				return nil
			}
		}
		if len(runs) < page || runs[len(runs)-1].RunIndex == nil {
			return nil
		}
		f.AfterRunIndex = runs[len(runs)-1].RunIndex
	}
}

// maxMemberDepth bounds the nesting of member runs eachReference reads.
const maxMemberDepth = 8

// findReference is the reference in out to the object name made by st
// whose key allowed takes.
func findReference(out *run.Output, st media.Storage, name string, allowed func(key string) bool) *media.Reference {
	var found *media.Reference
	eachReference(out, 0, func(raw json.RawMessage) bool {
		var ref media.Reference
		if json.Unmarshal(raw, &ref) != nil || ref.MediaID != name || !strings.HasSuffix(ref.StorageKey, "/"+name) ||
			ref.StorageBackend != st.Backend() || ref.Bucket != st.Bucket() || !allowed(ref.StorageKey) {
			return true
		}
		found = &ref
		return false
	})
	return found
}

// eachReference calls fn with each media reference out holds (as JSON) in
// the places the agent writes them: the run's and its input's media, the
// messages' parts, and its member runs' (to maxMemberDepth), until fn
// returns false; it reports whether fn never did.
func eachReference(out *run.Output, depth int, fn func(raw json.RawMessage) bool) bool {
	lists := [][]run.Media{out.Images, out.Videos, out.Audio, out.Files}
	if out.Input != nil {
		lists = append(lists, out.Input.Images, out.Input.Videos, out.Input.Audio, out.Input.Files)
	}
	for _, ms := range lists {
		for i := range ms {
			if raw := ms[i].Extra["media_reference"]; len(raw) > 0 && !fn(raw) {
				return false
			}
		}
	}
	for i := range out.Messages {
		for j := range out.Messages[i].Parts {
			if raw := out.Messages[i].Parts[j].MediaReference; len(raw) > 0 && !fn(raw) {
				return false
			}
		}
	}
	if depth >= maxMemberDepth {
		return true
	}
	for _, raw := range out.MemberResponses {
		var m run.Output
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if !eachReference(&m, depth+1, fn) {
			return false
		}
	}
	return true
}

// legacyMedia lists the objects of the layout before owners (under
// media.SessionDir of the session id, which the same id in another
// database or of another user shared) that the session's runs reference,
// read in the context's scope: deleting the session deletes these, and
// not the rest of that shared directory.
func legacyMedia(ctx context.Context, d *db.DB, session string) ([]media.Reference, error) {
	dir := media.SessionDir(session)
	seen := map[media.Reference]bool{}
	var out []media.Reference
	err := eachRunHolding(ctx, d, session, []byte(dir), func(o *run.Output) bool {
		eachReference(o, 0, func(raw json.RawMessage) bool {
			var ref media.Reference
			if json.Unmarshal(raw, &ref) == nil && strings.HasPrefix(ref.StorageKey, dir) && media.CheckKey(ref.StorageKey) == nil {
				k := media.Reference{StorageKey: ref.StorageKey, StorageBackend: ref.StorageBackend, Bucket: ref.Bucket}
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
			return true
		})
		return true
	})
	return out, err
}
