package agentos

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"path"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/media"
)

// getSessionMedia serves offloaded media (AGENTOS-WIRE.md): GET
// /sessions/{session_id}/media/{key} streams the object, or redirects to a
// fresh signed URL when the storage signs, only when the session is the
// caller's (user isolation) and the key is one of its objects; 404
// otherwise.
func (s *Server) getSessionMedia(w http.ResponseWriter, r *http.Request) error {
	notFound := errorf(http.StatusNotFound, "Media not found")
	_, sess, err := s.loadSession(r)
	if err != nil {
		return err
	}
	st := s.mediaStorageFor(sess)
	if st == nil {
		return notFound
	}
	key, err := media.Key(sess.SessionID, chi.URLParam(r, "key"))
	if err != nil {
		return notFound
	}
	ok, err := st.Exists(r.Context(), key)
	if err != nil {
		return err
	}
	if !ok {
		return notFound
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
