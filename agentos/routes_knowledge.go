package agentos

import (
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/wirecheck"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/knowledge/chunk"
	"github.com/agentryhq/agentry/knowledge/reader"
	"github.com/agentryhq/agentry/vectordb"
)

// contentView is AgentOS's ContentResponseSchema (size is a string there).
type contentView struct {
	ID            string         `json:"id"`
	Name          *string        `json:"name"`
	Description   *string        `json:"description"`
	Type          *string        `json:"type"`
	Size          *string        `json:"size"`
	LinkedTo      *string        `json:"linked_to"`
	Metadata      map[string]any `json:"metadata"`
	AccessCount   *int64         `json:"access_count"`
	Status        *string        `json:"status"`
	StatusMessage *string        `json:"status_message"`
	CreatedAt     *string        `json:"created_at"`
	UpdatedAt     *string        `json:"updated_at"`
}

func newContentView(c *db.KnowledgeContent) contentView {
	size := strconv.FormatInt(c.Size, 10)
	status := c.Status
	if status == "" {
		status = db.KnowledgeProcessing
	}
	v := contentView{ID: c.ID, Name: &c.Name, Description: &c.Description, Type: optional(c.Type), Size: &size,
		Status: &status, StatusMessage: &c.StatusMessage, CreatedAt: isoTime(c.CreatedAt), UpdatedAt: isoTime(c.UpdatedAt)}
	if len(c.Metadata) > 0 {
		_ = json.Unmarshal(c.Metadata, &v.Metadata)
	}
	return v
}

// knowledgeBase resolves the ?knowledge_id= and ?db_id= query parameters
// (see knowledgeBaseFor).
func (s *Server) knowledgeBase(r *http.Request) (*knowledge.Knowledge, error) {
	q := r.URL.Query()
	return s.knowledgeBaseFor(q.Get("knowledge_id"), q.Get("db_id"))
}

// knowledgeBaseFor resolves a knowledge base as Agno's
// get_knowledge_instance: by knowledge id (its name), else by the id of the
// database holding its contents (400 when several do: name one), else the
// first one configured. With both, the named one must use that database.
func (s *Server) knowledgeBaseFor(id, dbID string) (*knowledge.Knowledge, error) {
	if len(s.cfg.Knowledge) == 0 {
		return nil, errorf(http.StatusNotFound, "No knowledge base is configured")
	}
	inDB := func(k *knowledge.Knowledge) bool { return k.Config().DB.ID == dbID }
	if id != "" {
		for _, k := range s.cfg.Knowledge {
			if k.Name() != id {
				continue
			}
			if dbID != "" && !inDB(k) {
				return nil, errorf(http.StatusNotFound, "Knowledge base %s not found in database %s", id, dbID)
			}
			return k, nil
		}
		return nil, errorf(http.StatusNotFound, "Knowledge base %s not found", id)
	}
	if dbID == "" {
		return s.cfg.Knowledge[0], nil
	}
	var found []*knowledge.Knowledge
	for _, k := range s.cfg.Knowledge {
		if inDB(k) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		return nil, errorf(http.StatusNotFound, "Knowledge instance with db_id '%s' not found", dbID)
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, k := range found {
		names[i] = k.Name()
	}
	return nil, errorf(http.StatusBadRequest, "Several knowledge bases use db_id '%s': give knowledge_id, one of %s", dbID, strings.Join(names, ", "))
}

// knowledgeErr maps knowledge errors: shared content is 403 for users (as
// AgentOS), bad search input 400.
func knowledgeErr(err error) error {
	switch {
	case errors.Is(err, db.ErrForbidden):
		return errorf(http.StatusForbidden, "Cannot modify shared content")
	case errors.Is(err, vectordb.ErrInvalidQuery), errors.Is(err, knowledge.ErrEmptyQuery):
		return errorf(http.StatusBadRequest, "%s", err.Error())
	}
	return err
}

// uploadLimit is the multipart body limit of an upload: the knowledge
// base's size cap plus room for the form fields.
func uploadLimit(k *knowledge.Knowledge) int64 { return k.Config().MaxBytes + 1<<20 }

func (s *Server) uploadContent(w http.ResponseWriter, r *http.Request) error {
	k, err := s.knowledgeBase(r)
	if err != nil {
		return err
	}
	r.Body = http.MaxBytesReader(w, r.Body, uploadLimit(k))
	var c knowledge.Content
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "multipart/form-data"):
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			return bodyOrForm(err)
		}
		defer r.MultipartForm.RemoveAll()
		if f, h, err := r.FormFile("file"); err == nil {
			data, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				return bodyOrForm(err)
			}
			c.Data, c.Filename, c.ContentType = data, h.Filename, h.Header.Get("Content-Type")
		}
	case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
		if err := r.ParseForm(); err != nil {
			return bodyOrForm(err)
		}
	default:
		return errorf(http.StatusUnsupportedMediaType, "send multipart/form-data (file, text_content or url fields)")
	}
	if err := checkFormText(r, c.Filename); err != nil {
		return err
	}
	if err := checkFormOnce(r); err != nil {
		return err
	}
	// The fields are the body's only (r.FormValue would also read the URL
	// query, past checkFormText).
	c.Name, c.Description = r.PostFormValue("name"), r.PostFormValue("description")
	if err := checkContentText(c.Name, c.Description); err != nil {
		return err
	}
	c.Text = r.PostFormValue("text_content")
	if u := strings.TrimSpace(r.PostFormValue("url")); u != "" {
		var list []string
		if json.Unmarshal([]byte(u), &list) == nil {
			if len(list) != 1 {
				return errorf(http.StatusUnprocessableEntity, "url: give one URL per request")
			}
			u = list[0]
		}
		c.URL = u
	}
	if m := r.PostFormValue("metadata"); m != "" {
		if err := json.Unmarshal([]byte(m), &c.Metadata); err != nil {
			c.Metadata = map[string]any{"value": m} // as AgentOS: text that is not JSON
		}
	}
	if id := r.PostFormValue("reader_id"); id != "" {
		if !validReader(id) {
			return errorf(http.StatusBadRequest, "Invalid reader_id: %s", id)
		}
		c.Reader = id
	}
	if name := r.PostFormValue("chunker"); name != "" || r.PostFormValue("chunk_size") != "" || r.PostFormValue("chunk_overlap") != "" {
		size, err1 := formInt(r.PostFormValue("chunk_size"))
		overlap, err2 := formInt(r.PostFormValue("chunk_overlap"))
		if err := errors.Join(err1, err2); err != nil {
			return errorf(http.StatusUnprocessableEntity, "chunk_size and chunk_overlap must be integers")
		}
		ch, err := chunk.ByName(name, size, overlap)
		if err != nil {
			return errorf(http.StatusUnprocessableEntity, "%s", err.Error())
		}
		c.Chunker = ch
	}
	n := 0
	for _, set := range []bool{c.Text != "", c.URL != "", c.Data != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errorf(http.StatusBadRequest, "give exactly one of file, text_content or url")
	}
	row, err := k.InsertAsync(r.Context(), c)
	if err != nil {
		return knowledgeErr(err)
	}
	writeJSON(w, http.StatusAccepted, newContentView(row))
	return nil
}

// Content name and description bounds (the name column is VARCHAR(255)).
const (
	maxContentName        = 255
	maxContentDescription = 1000
)

// checkContentText refuses (422) a content name or description longer than
// the upload and PATCH routes store.
func checkContentText(name, description string) error {
	if utf8.RuneCountInString(name) > maxContentName {
		return errorf(http.StatusUnprocessableEntity, "name must be 1 to %d characters", maxContentName)
	}
	if utf8.RuneCountInString(description) > maxContentDescription {
		return errorf(http.StatusUnprocessableEntity, "description must be at most %d characters", maxContentDescription)
	}
	return nil
}

func validReader(id string) bool {
	for _, k := range reader.Kinds() {
		if k == id {
			return true
		}
	}
	return false
}

func formInt(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	return strconv.Atoi(v)
}

func bodyOrForm(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return errorf(http.StatusBadRequest, "malformed form: %v", err)
}

var contentPageRules = pageRules{SortColumns: []string{"created_at", "updated_at", "name"}, DefaultOrder: db.Desc}

func (s *Server) listContent(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	k, err := s.knowledgeBase(r)
	if err != nil {
		return err
	}
	pq, err := parsePageQuery(r.URL.Query(), contentPageRules)
	if err != nil {
		return err
	}
	rows, total, err := k.List(r.Context(), db.KnowledgeFilter{Limit: pq.Limit, Page: pq.Page, SortBy: pq.SortBy, SortOrder: pq.SortOrder})
	if err != nil {
		return err
	}
	views := make([]contentView, 0, len(rows))
	for i := range rows {
		views = append(views, newContentView(&rows[i]))
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

func (s *Server) loadContent(r *http.Request) (*knowledge.Knowledge, *db.KnowledgeContent, error) {
	k, err := s.knowledgeBase(r)
	if err != nil {
		return nil, nil, err
	}
	id := chi.URLParam(r, "content_id")
	c, err := k.Get(r.Context(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil, errorf(http.StatusNotFound, "Content not found: %s", id)
	}
	return k, c, err
}

func (s *Server) getContent(w http.ResponseWriter, r *http.Request) error {
	_, c, err := s.loadContent(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newContentView(c))
	return nil
}

func (s *Server) patchContent(w http.ResponseWriter, r *http.Request) error {
	k, c, err := s.loadContent(r)
	if err != nil {
		return err
	}
	if err := r.ParseMultipartForm(1 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return bodyOrForm(err)
	}
	if r.MultipartForm != nil {
		defer r.MultipartForm.RemoveAll()
	}
	if err := checkFormText(r, ""); err != nil {
		return err
	}
	if err := checkFormOnce(r); err != nil {
		return err
	}
	if v, ok := formField(r, "name"); ok {
		if err := checkContentText(v, ""); err != nil || v == "" {
			return errorf(http.StatusUnprocessableEntity, "name must be 1 to %d characters", maxContentName)
		}
		c.Name = v
	}
	if v, ok := formField(r, "description"); ok {
		if err := checkContentText("", v); err != nil {
			return err
		}
		c.Description = v
	}
	if v, ok := formField(r, "metadata"); ok && v != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return errorf(http.StatusBadRequest, "Invalid JSON format for metadata")
		}
		c.Metadata, _ = json.Marshal(m)
	}
	if v, ok := formField(r, "reader_id"); ok && v != "" && !validReader(v) {
		return errorf(http.StatusBadRequest, "Invalid reader_id: %s", v)
	}
	if err := k.Update(r.Context(), c); err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return errorf(http.StatusNotFound, "Content not found: %s", c.ID)
		}
		return knowledgeErr(err)
	}
	writeJSON(w, http.StatusOK, newContentView(c))
	return nil
}

// checkFormText is a 422, as for the run form, when a parsed form field or
// the uploaded file's name is not UTF-8 text or holds a NUL (raw, or
// escaped in the JSON of metadata or url): the content row keeps the name,
// description and metadata, which Postgres cannot store with a NUL (a
// 500), and text that was not UTF-8 was refused by the database or only
// after the upload was accepted.
func checkFormText(r *http.Request, filename string) error {
	if !textOK(filename) {
		return errorf(http.StatusUnprocessableEntity, "the file's name must be UTF-8 text without NUL characters")
	}
	for name, vs := range r.PostForm {
		if !textOK(name) || slices.ContainsFunc(vs, func(v string) bool { return !textOK(v) }) {
			return errorf(http.StatusUnprocessableEntity, "field %s must be UTF-8 text without NUL characters", safeName(name))
		}
		// metadata and url are read as JSON when they parse as JSON.
		if (name == "metadata" || name == "url") && slices.ContainsFunc(vs, func(v string) bool { return json.Valid([]byte(v)) && wirecheck.EscapesNUL([]byte(v)) }) {
			return errNULField(name)
		}
	}
	return nil
}

// checkFormOnce refuses (422) an upload that gives a field or the file more
// than once: only one of each was read and the rest dropped unsaid.
func checkFormOnce(r *http.Request) error {
	for name, vs := range r.PostForm {
		if len(vs) > 1 {
			return errorf(http.StatusUnprocessableEntity, "field %s is given more than once", safeName(name))
		}
	}
	if r.MultipartForm != nil && len(r.MultipartForm.File["file"]) > 1 {
		return errorf(http.StatusUnprocessableEntity, "give one file per request")
	}
	return nil
}

func formField(r *http.Request, name string) (string, bool) {
	if r.MultipartForm != nil {
		if v, ok := r.MultipartForm.Value[name]; ok && len(v) > 0 {
			return v[0], true
		}
	}
	if r.PostForm != nil {
		if v, ok := r.PostForm[name]; ok && len(v) > 0 {
			return v[0], true
		}
	}
	return "", false
}

func (s *Server) deleteContent(w http.ResponseWriter, r *http.Request) error {
	k, c, err := s.loadContent(r)
	if err != nil {
		return err
	}
	if err := k.Delete(r.Context(), c.ID); err != nil {
		if errors.Is(err, db.ErrForbidden) {
			return errorf(http.StatusForbidden, "Cannot delete shared content")
		}
		return err
	}
	writeJSON(w, http.StatusOK, contentView{ID: c.ID})
	return nil
}

func (s *Server) deleteAllContent(w http.ResponseWriter, r *http.Request) error {
	k, err := s.knowledgeBase(r)
	if err != nil {
		return err
	}
	if err := k.DeleteAll(r.Context()); err != nil {
		return knowledgeErr(err)
	}
	writeJSON(w, http.StatusOK, "success")
	return nil
}

// contentStatusView is AgentOS's ContentStatusResponse.
type contentStatusView struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	StatusMessage string `json:"status_message"`
}

func (s *Server) contentStatus(w http.ResponseWriter, r *http.Request) error {
	k, err := s.knowledgeBase(r)
	if err != nil {
		return err
	}
	id := chi.URLParam(r, "content_id")
	c, err := k.Get(r.Context(), id)
	if errors.Is(err, db.ErrNotFound) {
		// AgentOS answers a missing (or another user's) content as FAILED.
		writeJSON(w, http.StatusOK, contentStatusView{ID: id, Status: db.KnowledgeFailed, StatusMessage: "Content not found"})
		return nil
	}
	if err != nil {
		return err
	}
	status := c.Status
	if status == "" {
		status = db.KnowledgeProcessing
	}
	writeJSON(w, http.StatusOK, contentStatusView{ID: id, Status: status, StatusMessage: c.StatusMessage})
	return nil
}

// searchRequest is AgentOS's VectorSearchRequestSchema.
type searchRequest struct {
	Query       string         `json:"query"`
	DBID        string         `json:"db_id"`
	KnowledgeID string         `json:"knowledge_id"`
	VectorDBIDs []string       `json:"vector_db_ids"`
	SearchType  string         `json:"search_type"`
	MaxResults  *int           `json:"max_results"`
	Filters     map[string]any `json:"filters"`
	Meta        *struct {
		Limit *int `json:"limit"`
		Page  *int `json:"page"`
	} `json:"meta"`
}

// searchResultView is AgentOS's VectorSearchResult.
type searchResultView struct {
	ID             string         `json:"id"`
	Content        string         `json:"content"`
	Name           *string        `json:"name"`
	MetaData       map[string]any `json:"meta_data"`
	Usage          map[string]any `json:"usage"`
	RerankingScore *float64       `json:"reranking_score"`
	ContentID      *string        `json:"content_id"`
	ContentOrigin  *string        `json:"content_origin"`
	Size           *int           `json:"size"`
}

func (s *Server) searchKnowledge(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	var req searchRequest
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	// The body's ids, else the query's (as the other knowledge routes).
	q := r.URL.Query()
	id, dbID := cmp.Or(req.KnowledgeID, q.Get("knowledge_id")), cmp.Or(req.DBID, q.Get("db_id"))
	k, err := s.knowledgeBaseFor(id, dbID)
	if err != nil {
		return err
	}
	// One knowledge base has one vector store, listed by /knowledge/config
	// under the knowledge base's name: vector_db_ids must name it (Agno's
	// check), not be ignored.
	if len(req.VectorDBIDs) > 0 && !slices.Contains(req.VectorDBIDs, k.Name()) {
		return errorf(http.StatusBadRequest, "None of the provided Vector DB IDs %s match the knowledge base Vector DB ID %s", strings.Join(req.VectorDBIDs, ", "), k.Name())
	}
	if strings.TrimSpace(req.Query) == "" {
		return errorf(http.StatusUnprocessableEntity, "query is required")
	}
	if err := checkKnowledgeFilters("filters", req.Filters); err != nil {
		return err
	}
	limit, page := 20, 1
	if req.Meta != nil {
		if req.Meta.Limit != nil {
			limit = *req.Meta.Limit
		}
		if req.Meta.Page != nil {
			page = *req.Meta.Page
		}
	}
	if limit < 1 || page < 1 {
		return errorf(http.StatusUnprocessableEntity, "meta.limit and meta.page must be at least 1")
	}
	if err := checkPageOffset(page, limit); err != nil {
		return err
	}
	max := 0
	if req.MaxResults != nil {
		if *req.MaxResults < 1 || *req.MaxResults > vectordb.MaxLimit {
			return errorf(http.StatusUnprocessableEntity, "max_results must be from 1 to %d", vectordb.MaxLimit)
		}
		max = *req.MaxResults
	}
	docs, err := k.SearchQuery(r.Context(), knowledge.Query{Text: req.Query, Filters: req.Filters, Limit: max, Mode: vectordb.Mode(req.SearchType)})
	if err != nil {
		return knowledgeErr(err)
	}
	total := len(docs)
	from := min((page-1)*limit, total)
	to := from + min(limit, total-from)
	views := make([]searchResultView, 0, to-from)
	for _, d := range docs[from:to] {
		v := searchResultView{ID: d.ID, Content: d.Content, Name: optional(d.Name), MetaData: d.MetaData, ContentID: optional(d.ContentID)}
		size := len(d.Content)
		v.Size = &size
		views = append(views, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": views, "meta": map[string]any{
		"page": page, "limit": limit, "total_count": total, "total_pages": int(math.Ceil(float64(total) / float64(limit))),
		"search_time_ms": float64(time.Since(start).Microseconds()) / 1000}})
	return nil
}

func (s *Server) knowledgeConfig(w http.ResponseWriter, r *http.Request) error {
	k, err := s.knowledgeBase(r)
	if err != nil {
		return err
	}
	chunkers := map[string]any{}
	var chunkerNames []string
	for _, c := range chunk.Names() {
		chunkers[c.Name()] = map[string]any{"key": c.Name(), "name": c.Name(), "description": nil, "metadata": map[string]any{}}
		chunkerNames = append(chunkerNames, c.Name())
	}
	readers := map[string]any{}
	types := map[string][]string{}
	for _, kind := range reader.Kinds() {
		readers[kind] = map[string]any{"id": kind, "name": kind, "description": nil, "chunkers": chunkerNames}
		types[reader.MIME(kind)] = []string{kind}
	}
	// filter keys: the metadata keys of the content the caller can see
	keys := map[string]bool{}
	rows, _, err := k.List(r.Context(), db.KnowledgeFilter{Limit: 1000, Page: 1})
	if err != nil {
		return err
	}
	for _, c := range rows {
		var m map[string]any
		if json.Unmarshal(c.Metadata, &m) == nil {
			for key := range m {
				keys[key] = true
			}
		}
	}
	filters := make([]string, 0, len(keys))
	for key := range keys {
		filters = append(filters, key)
	}
	sort.Strings(filters)
	cfg := k.Config()
	writeJSON(w, http.StatusOK, map[string]any{
		"readers": readers, "readersForType": types, "chunkers": chunkers, "filters": filters,
		"vector_dbs": []any{map[string]any{"id": k.Name(), "name": k.Name(), "description": cfg.Description,
			"search_types": []string{string(vectordb.Vector), string(vectordb.Keyword), string(vectordb.Hybrid)}}},
		"remote_content_sources": nil,
	})
	return nil
}
