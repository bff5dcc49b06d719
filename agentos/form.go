package agentos

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentryhq/agentry/internal/lossless"
	"github.com/agentryhq/agentry/internal/wirecheck"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/vectordb"
	"github.com/google/uuid"
)

// runRequest is a decoded POST /{agents,teams,workflows}/{id}/runs form.
type runRequest struct {
	// Message is the user's input; required, valid UTF-8.
	Message string
	// Stream defaults to true.
	Stream bool
	// StreamSent: the form had a stream field (background=true streams
	// only when stream=true was sent).
	StreamSent bool
	SessionID  string
	UserID     string
	Background bool
	Files      []uploadedFile
	// Media sent as JSON form fields (images, audio, videos, input_files),
	// as Agno's client sends a remote member's: each a list of media
	// objects (Agno's to_dict, content base64), after the uploads.
	Images, Audio, Videos, InputFiles []run.Media
	// JSON-encoded form fields; nil when absent.
	SessionState map[string]any
	Dependencies map[string]any
	Metadata     map[string]any
	OutputSchema json.RawMessage
	// KnowledgeFilters (JSON object of metadata values) restrict the run's
	// knowledge searches, over the agent's own filters; nil when absent.
	KnowledgeFilters map[string]any
	// AddHistoryToContext overrides the agent's add_history_to_context for
	// this run; nil when absent.
	AddHistoryToContext *bool
	// Version runs that config version of a stored component; 0 when absent.
	Version int
	// IdempotencyKey is the Idempotency-Key header (at most 512 characters).
	IdempotencyKey string
}

// runFormFields are the fields of the run form; any other field is refused
// (422) rather than ignored. Agno's run routes pass every other field on to
// the run as a keyword argument; those Agentry does not implement
// (add_dependencies_to_context, add_session_state_to_context, debug_mode,
// stream_events, factory_input, use_json_schema, ...) would otherwise be
// accepted and do nothing.
const runFormFields = "message, stream, session_id, user_id, files, background, session_state, dependencies, metadata, " +
	"output_schema, knowledge_filters, add_history_to_context, version, monitor, images, audio, videos, input_files"

// uploadedFile is one "files" part.
type uploadedFile struct {
	Filename    string
	ContentType string
	Content     []byte
}

// formLimits bound form decoding; zero values take the defaults. The whole
// body is additionally capped by the server's body limit.
type formLimits struct {
	// MaxFiles (16) is the number of "files" parts.
	MaxFiles int
	// MaxFileBytes (16 MiB) caps each file.
	MaxFileBytes int64
	// MaxFieldBytes (1 MiB) caps each text field, and 4× that a urlencoded body.
	MaxFieldBytes int64
	// MaxParts (256) caps the number of parts or fields.
	MaxParts int
}

func (l *formLimits) fill() {
	if l.MaxFiles <= 0 {
		l.MaxFiles = 16
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 16 << 20
	}
	if l.MaxFieldBytes <= 0 {
		l.MaxFieldBytes = 1 << 20
	}
	if l.MaxParts <= 0 {
		l.MaxParts = 256
	}
}

// maxIdempotencyKeyLen is the longest accepted Idempotency-Key, in characters.
const maxIdempotencyKeyLen = 512

// decodeRunForm reads a run request from a multipart/form-data or
// application/x-www-form-urlencoded body (the URL query is not read). Errors
// are *httpError: 422 for missing or invalid fields (including invalid UTF-8,
// invalid JSON and repeated fields), 413 for oversized parts, 415 for other
// content types.
func decodeRunForm(r *http.Request, lim formLimits) (*runRequest, error) {
	lim.fill()
	req := &runRequest{Stream: true}
	fields := map[string]string{}
	if err := readFormBody(r, lim, fields, req); err != nil {
		return nil, err
	}
	if err := req.setFields(fields); err != nil {
		return nil, err
	}
	if keys := r.Header.Values("Idempotency-Key"); len(keys) > 0 {
		if len(keys) > 1 {
			return nil, errorf(http.StatusUnprocessableEntity, "send one Idempotency-Key header")
		}
		k := keys[0]
		if !utf8.ValidString(k) || utf8.RuneCountInString(k) > maxIdempotencyKeyLen || strings.TrimSpace(k) == "" || hasControl(k) {
			return nil, errorf(http.StatusUnprocessableEntity, "Idempotency-Key must be 1 to %d printable characters", maxIdempotencyKeyLen)
		}
		req.IdempotencyKey = k
	}
	return req, nil
}

// readFormBody reads a multipart/form-data or urlencoded body into fields
// (and multipart "files" parts into req.Files). No Content-Type reads nothing.
func readFormBody(r *http.Request, lim formLimits, fields map[string]string, req *runRequest) error {
	ct := r.Header.Get("Content-Type")
	switch mt, params, err := mime.ParseMediaType(ct); {
	case ct == "":
		return nil
	case err != nil:
		return errorf(http.StatusUnprocessableEntity, "invalid Content-Type header")
	case mt == "multipart/form-data":
		if params["boundary"] == "" {
			return errorf(http.StatusUnprocessableEntity, "multipart body has no boundary")
		}
		return readMultipart(multipart.NewReader(r.Body, params["boundary"]), lim, fields, req)
	case mt == "application/x-www-form-urlencoded":
		return readURLEncoded(r.Body, lim, fields)
	default:
		return errorf(http.StatusUnsupportedMediaType, "use multipart/form-data or application/x-www-form-urlencoded")
	}
}

// bodyErr maps a body read failure: over the limit is 413, anything else a
// malformed body.
func bodyErr(err error, what string) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &httpError{Status: http.StatusRequestEntityTooLarge, Detail: "request body is larger than " + strconv.FormatInt(mbe.Limit, 10) + " bytes", Err: err}
	}
	return &httpError{Status: http.StatusUnprocessableEntity, Detail: "malformed " + what + " body", Err: err}
}

func readMultipart(mr *multipart.Reader, lim formLimits, fields map[string]string, req *runRequest) error {
	for parts := 0; ; parts++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return bodyErr(err, "multipart")
		}
		if parts >= lim.MaxParts {
			return errorf(http.StatusUnprocessableEntity, "too many form parts (at most %d)", lim.MaxParts)
		}
		name := part.FormName()
		switch {
		case name == "":
			// Not a form field; ignore its content.
		case name == "files":
			if len(req.Files) >= lim.MaxFiles {
				return errorf(http.StatusUnprocessableEntity, "too many files (at most %d)", lim.MaxFiles)
			}
			data, err := io.ReadAll(io.LimitReader(part, lim.MaxFileBytes+1))
			if err != nil {
				return bodyErr(err, "multipart")
			}
			if int64(len(data)) > lim.MaxFileBytes {
				return errorf(http.StatusRequestEntityTooLarge, "each file may be at most %d bytes", lim.MaxFileBytes)
			}
			fname := part.FileName()
			if !utf8.ValidString(fname) || hasControl(fname) || len(fname) > 1024 {
				return errorf(http.StatusUnprocessableEntity, "file name must be valid UTF-8 without control characters")
			}
			ctype := part.Header.Get("Content-Type")
			if ctype == "" {
				ctype = "application/octet-stream"
			}
			req.Files = append(req.Files, uploadedFile{Filename: fname, ContentType: ctype, Content: data})
		case part.FileName() != "":
			return errorf(http.StatusUnprocessableEntity, "upload files in the \"files\" field")
		default:
			data, err := io.ReadAll(io.LimitReader(part, lim.MaxFieldBytes+1))
			if err != nil {
				return bodyErr(err, "multipart")
			}
			if int64(len(data)) > lim.MaxFieldBytes {
				return errorf(http.StatusRequestEntityTooLarge, "each form field may be at most %d bytes", lim.MaxFieldBytes)
			}
			if err := addField(fields, name, string(data)); err != nil {
				return err
			}
		}
		_ = part.Close()
	}
}

func readURLEncoded(body io.Reader, lim formLimits, fields map[string]string) error {
	limit := 4 * lim.MaxFieldBytes
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return bodyErr(err, "form")
	}
	if int64(len(data)) > limit {
		return errorf(http.StatusRequestEntityTooLarge, "a urlencoded form may be at most %d bytes; use multipart/form-data", limit)
	}
	if bytes.Count(data, []byte("&"))+1 > lim.MaxParts {
		return errorf(http.StatusUnprocessableEntity, "too many form fields (at most %d)", lim.MaxParts)
	}
	values, err := url.ParseQuery(string(data))
	if err != nil {
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: "malformed urlencoded form", Err: err}
	}
	if _, ok := values["files"]; ok {
		return errorf(http.StatusUnprocessableEntity, "files need a multipart/form-data body")
	}
	for name, vs := range values {
		if len(vs) > 1 {
			return errorf(http.StatusUnprocessableEntity, "field %s is given more than once", safeName(name))
		}
		if err := addField(fields, name, vs[0]); err != nil {
			return err
		}
	}
	return nil
}

func addField(fields map[string]string, name, value string) error {
	if _, dup := fields[name]; dup {
		return errorf(http.StatusUnprocessableEntity, "field %s is given more than once", safeName(name))
	}
	if !utf8.ValidString(name) || !utf8.ValidString(value) {
		return errorf(http.StatusUnprocessableEntity, "field %s must be valid UTF-8", safeName(name))
	}
	fields[name] = value
	return nil
}

// safeName keeps field names echoed in errors short and printable.
func safeName(name string) string {
	if !utf8.ValidString(name) || hasControl(name) || len(name) > 64 {
		return "(invalid name)"
	}
	return strconv.Quote(name)
}

func (req *runRequest) setFields(fields map[string]string) error {
	msg, ok := fields["message"]
	if !ok || strings.TrimSpace(msg) == "" {
		return errorf(http.StatusUnprocessableEntity, "message is required")
	}
	if strings.ContainsRune(msg, 0) {
		return errorf(http.StatusUnprocessableEntity, "message must not contain NUL characters")
	}
	req.Message = msg
	var err error
	for name, v := range fields {
		switch name {
		case "message":
		case "stream":
			req.Stream, err = formBool(name, v, true)
			req.StreamSent = true
		case "background":
			req.Background, err = formBool(name, v, false)
		case "session_id":
			req.SessionID, err = formID(name, v)
		case "user_id":
			req.UserID, err = formID(name, v)
		case "session_state":
			req.SessionState, err = formObject(name, v)
		case "dependencies":
			req.Dependencies, err = formObject(name, v)
		case "metadata":
			req.Metadata, err = formObject(name, v)
		case "output_schema":
			req.OutputSchema, err = formRawObject(name, v)
		case "knowledge_filters":
			req.KnowledgeFilters, err = formKnowledgeFilters(name, v)
		case "add_history_to_context":
			if strings.TrimSpace(v) != "" {
				var on bool
				on, err = formBool(name, v, false)
				req.AddHistoryToContext = &on
			}
		case "monitor":
			// Agno's team run form declares it and nothing in Agno reads it:
			// accepted, as a boolean, for what Agno's clients send.
			_, err = formBool(name, v, true)
		case "version":
			req.Version, err = formVersion(name, v)
		case "images":
			req.Images, err = formMedia(name, v)
		case "audio":
			req.Audio, err = formMedia(name, v)
		case "videos":
			req.Videos, err = formMedia(name, v)
		case "input_files":
			req.InputFiles, err = formMedia(name, v)
		default:
			err = errorf(http.StatusUnprocessableEntity, "field %s is not supported by this server; the run form takes %s", safeName(name), runFormFields)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// formKnowledgeFilters reads knowledge_filters: a JSON object of metadata
// keys and the values they must equal (Agentry's knowledge filters). Agno's
// filter expressions (an object with "op", or a list of them) are refused:
// read as metadata keys they would filter on the wrong thing.
func formKnowledgeFilters(name, v string) (map[string]any, error) {
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "[") {
		return nil, errorf(http.StatusUnprocessableEntity, "%s must be a JSON object of metadata values; filter expression lists are not supported", name)
	}
	m, err := formObject(name, v)
	if err != nil || m == nil {
		return nil, err
	}
	return m, checkKnowledgeFilters(name, m)
}

// checkKnowledgeFilters refuses (422) knowledge filters Agentry would not
// apply as asked: an Agno filter expression (an object with "op"), or
// values a vector store cannot filter on. The run form and POST
// /knowledge/search answer alike.
func checkKnowledgeFilters(name string, m map[string]any) error {
	if _, ok := m["op"]; ok {
		return errorf(http.StatusUnprocessableEntity, "%s must be a JSON object of metadata values; filter expressions (\"op\") are not supported", name)
	}
	q := vectordb.Query{Mode: vectordb.Keyword, Text: "-", Filters: m}
	if err := vectordb.CheckQuery(&q, 0); err != nil {
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: name + ": " + strings.TrimPrefix(err.Error(), vectordb.ErrInvalidQuery.Error()+": "), Err: err}
	}
	return nil
}

// formVersion reads a component config version: a positive integer; empty
// is absent.
func formVersion(name, v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errorf(http.StatusUnprocessableEntity, "%s must be a positive integer (a config version)", name)
	}
	return n, nil
}

// formBool accepts what Agno's (pydantic's) form booleans accept: true/t/
// yes/y/on/1 and false/f/no/n/off/0 in any case; empty is def.
func formBool(name, v string, def bool) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "":
		return def, nil
	case "true", "1", "yes", "on", "t", "y":
		return true, nil
	case "false", "0", "no", "off", "f", "n":
		return false, nil
	}
	return false, errorf(http.StatusUnprocessableEntity, "%s must be true or false", name)
}

// formID trims a form's id and validates it (wirecheck.CheckID): 422 when
// refused.
func formID(name, v string) (string, error) {
	v = strings.TrimSpace(v)
	if err := wirecheck.CheckID(name, v); err != nil {
		return "", &httpError{Status: http.StatusUnprocessableEntity, Detail: err.Error()}
	}
	return v, nil
}

func formObject(name, v string) (map[string]any, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	// A number float64 cannot give back (a 64-bit id) stays json.Number,
	// stored as sent (as PATCH /sessions keeps it).
	m, err := lossless.UnmarshalExactObject([]byte(v))
	if err != nil {
		return nil, &httpError{Status: http.StatusUnprocessableEntity, Detail: name + " must be a JSON object", Err: err}
	}
	if wirecheck.EscapesNUL([]byte(v)) {
		return nil, errNULField(name)
	}
	return m, nil
}

// formMedia reads a media form field: a JSON array of media objects as
// Agno's to_dict writes them, each with its bytes (content, base64) or a
// url. A filepath is a path on the sender's machine, which Agno's client
// sends beside the content: it is dropped; one with nothing else is
// refused, as Agentry reads no local file a caller names.
func formMedia(name, v string) ([]run.Media, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var list []run.Media
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		return nil, &httpError{Status: http.StatusUnprocessableEntity, Detail: name + " must be a JSON array of media objects (content base64, or url)", Err: err}
	}
	if wirecheck.EscapesNUL([]byte(v)) {
		return nil, errNULField(name)
	}
	for i := range list {
		m := &list[i]
		switch {
		case len(m.Content) == 0 && m.URL == "" && m.Filepath != "":
			return nil, errorf(http.StatusUnprocessableEntity, "%s[%d]: a filepath alone is not accepted; send the content (base64) or a url", name, i)
		case len(m.Content) == 0 && m.URL == "":
			return nil, errorf(http.StatusUnprocessableEntity, "%s[%d] has neither content nor url", name, i)
		}
		m.Filepath = ""
		if m.ID == "" {
			m.ID = uuid.NewString()
		}
		if m.Size == 0 {
			m.Size = int64(len(m.Content))
		}
	}
	return list, nil
}

// errNULField refuses a JSON field holding a NUL in a string (\u0000):
// Postgres stores none, so the run could not be saved there.
func errNULField(name string) error {
	return errorf(http.StatusUnprocessableEntity, `%s must not contain NUL characters (\u0000)`, name)
}

func formRawObject(name, v string) (json.RawMessage, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &probe); err != nil || probe == nil {
		return nil, &httpError{Status: http.StatusUnprocessableEntity, Detail: name + " must be a JSON object (a JSON schema)", Err: err}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(v)); err != nil {
		return nil, &httpError{Status: http.StatusUnprocessableEntity, Detail: name + " must be a JSON object (a JSON schema)", Err: err}
	}
	if wirecheck.EscapesNUL(buf.Bytes()) {
		return nil, errNULField(name)
	}
	return buf.Bytes(), nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}
