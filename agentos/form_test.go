package agentos

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

type formPart struct {
	name, filename, value string
}

func multipartBody(t testing.TB, parts ...formPart) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p.filename != "" {
			w, err = mw.CreateFormFile(p.name, p.filename)
		} else {
			w, err = mw.CreateFormField(p.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(w, p.value)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), buf.Bytes()
}

// runsServer echoes the decoded runRequest of POST /agents/{id}/runs.
func runsServer(t *testing.T) string {
	t.Helper()
	ts, _ := testServer(t, Config{BodyLimit: 64 << 10}, func(s *Server) {
		s.router.Post("/agents/{id}/runs", func(w http.ResponseWriter, r *http.Request) {
			req, err := decodeRunForm(r, formLimits{MaxFiles: 2, MaxFileBytes: 1024, MaxFieldBytes: 4096})
			if err != nil {
				writeErr(w, r, s.log, err)
				return
			}
			writeJSON(w, 200, req)
		})
	})
	return ts.URL + "/agents/a1/runs"
}

func TestDecodeRunForm_AcceptsValidForms(t *testing.T) {
	t.Parallel()
	endpoint := runsServer(t)
	ct, body := multipartBody(t,
		formPart{name: "message", value: "héllo <world>"},
		formPart{name: "stream", value: "false"},
		formPart{name: "session_id", value: "s-1"},
		formPart{name: "user_id", value: "u-1"},
		formPart{name: "background", value: "1"},
		formPart{name: "session_state", value: `{"step": 2}`},
		formPart{name: "dependencies", value: `{"db": "x"}`},
		formPart{name: "metadata", value: `{"k": [1, 2]}`},
		formPart{name: "output_schema", value: `{ "type": "object" }`},
		formPart{name: "knowledge_filters", value: `{"a":1}`},
		formPart{name: "files", filename: "a.txt", value: "AAA"},
		formPart{name: "files", filename: "b.png", value: "BB"},
	)
	tests := []struct {
		name   string
		ct     string
		body   []byte
		header map[string]string
		check  func(t *testing.T, got runRequest)
	}{
		{"urlencoded defaults", "application/x-www-form-urlencoded", []byte("message=hi"), nil, func(t *testing.T, got runRequest) {
			if got.Message != "hi" || !got.Stream || got.Background || got.SessionID != "" || got.Files != nil {
				t.Errorf("%+v", got)
			}
		}},
		{"urlencoded stream values", "application/x-www-form-urlencoded", []byte("message=hi&stream=0&background=TRUE&session_id=&user_id=%20u%20"), nil, func(t *testing.T, got runRequest) {
			if got.Stream || !got.Background || got.UserID != "u" {
				t.Errorf("%+v", got)
			}
		}},
		{"empty stream keeps default", "application/x-www-form-urlencoded", []byte("message=hi&stream="), nil, func(t *testing.T, got runRequest) {
			if !got.Stream {
				t.Errorf("%+v", got)
			}
		}},
		{"multipart with every field", ct, body, map[string]string{"Idempotency-Key": strings.Repeat("k", 512)}, func(t *testing.T, got runRequest) {
			if got.Message != "héllo <world>" || got.Stream || !got.Background || got.SessionID != "s-1" || got.UserID != "u-1" {
				t.Errorf("scalars: %+v", got)
			}
			if got.SessionState["step"] != float64(2) || got.Dependencies["db"] != "x" || got.Metadata["k"] == nil {
				t.Errorf("objects: %+v", got)
			}
			if string(got.OutputSchema) != `{"type":"object"}` || got.KnowledgeFilters["a"] != float64(1) {
				t.Errorf("schema/filters: %s %v", got.OutputSchema, got.KnowledgeFilters)
			}
			if len(got.Files) != 2 || got.Files[0].Filename != "a.txt" || string(got.Files[0].Content) != "AAA" || got.Files[1].Filename != "b.png" {
				t.Errorf("files: %+v", got.Files)
			}
			if len(got.IdempotencyKey) != 512 {
				t.Errorf("idempotency key length %d", len(got.IdempotencyKey))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{"Content-Type": tt.ct}
			for k, v := range tt.header {
				h[k] = v
			}
			res := do(t, "POST", endpoint, bytes.NewReader(tt.body), h)
			if res.status != 200 {
				t.Fatalf("status %d %s", res.status, res.body)
			}
			var got runRequest
			if err := json.Unmarshal([]byte(res.body), &got); err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
}

func TestDecodeRunForm_RejectsBadForms(t *testing.T) {
	t.Parallel()
	endpoint := runsServer(t)
	form := "application/x-www-form-urlencoded"
	mp := func(parts ...formPart) (string, []byte) { return multipartBody(t, parts...) }
	msg := formPart{name: "message", value: "hi"}
	tests := []struct {
		name   string
		ct     string
		body   []byte
		header map[string]string
		status int
	}{
		{"no body", "", nil, nil, 422},
		{"missing message", form, []byte("stream=true"), nil, 422},
		{"empty message", form, []byte("message="), nil, 422},
		{"blank message", form, []byte("message=%20%0A"), nil, 422},
		{"invalid UTF-8 message urlencoded", form, []byte("message=%FF%FE"), nil, 422},
		{"NUL in message", form, []byte("message=a%00b"), nil, 422},
		{"bad escape", form, []byte("message=%zz"), nil, 422},
		{"bad stream", form, []byte("message=hi&stream=maybe"), nil, 422},
		{"bad background", form, []byte("message=hi&background=2"), nil, 422},
		{"repeated message", form, []byte("message=a&message=b"), nil, 422},
		{"invalid session_state JSON", form, []byte("message=hi&session_state=%7Bnope"), nil, 422},
		{"array dependencies", form, []byte("message=hi&dependencies=%5B1%5D"), nil, 422},
		{"string metadata", form, []byte("message=hi&metadata=%22x%22"), nil, 422},
		{"invalid output_schema", form, []byte("message=hi&output_schema=%7B%22type%22"), nil, 422},
		{"array output_schema", form, []byte("message=hi&output_schema=%5B%5D"), nil, 422},
		{"null output_schema", form, []byte("message=hi&output_schema=null"), nil, 422},
		{"session id with control chars", form, []byte("message=hi&session_id=a%07b"), nil, 422},
		{"overlong user id", form, []byte("message=hi&user_id=" + strings.Repeat("u", 300)), nil, 422},
		{"files in urlencoded", form, []byte("message=hi&files=x"), nil, 422},
		{"idempotency key too long", form, []byte("message=hi"), map[string]string{"Idempotency-Key": strings.Repeat("k", 513)}, 422},
		{"urlencoded over the server limit", form, []byte("message=" + strings.Repeat("a", 70<<10)), nil, 413},
		{"text/plain", "text/plain", []byte("message=hi"), nil, 415},
		{"json body", "application/json", []byte(`{"message":"hi"}`), nil, 415},
		{"unparsable content type", "multipart/form-data; boundary", []byte("x"), nil, 422},
		{"multipart without boundary", "multipart/form-data", []byte("x"), nil, 422},
	}
	add := func(name string, status int, header map[string]string, parts ...formPart) {
		ct, body := mp(parts...)
		tests = append(tests, struct {
			name   string
			ct     string
			body   []byte
			header map[string]string
			status int
		}{name, ct, body, header, status})
	}
	add("invalid UTF-8 message multipart", 422, nil, formPart{name: "message", value: "ok\xffno"})
	add("repeated multipart field", 422, nil, msg, formPart{name: "session_id", value: "a"}, formPart{name: "session_id", value: "b"})
	add("too many files", 422, nil, msg, formPart{name: "files", filename: "1", value: "1"}, formPart{name: "files", filename: "2", value: "2"}, formPart{name: "files", filename: "3", value: "3"})
	add("file too large", 413, nil, msg, formPart{name: "files", filename: "big", value: strings.Repeat("x", 1025)})
	add("field too large", 413, nil, formPart{name: "message", value: strings.Repeat("x", 4097)})
	add("upload in a text field", 422, nil, msg, formPart{name: "session_state", filename: "s.json", value: "{}"})
	add("multipart missing message", 422, nil, formPart{name: "stream", value: "false"})
	add("multipart bad metadata", 422, nil, msg, formPart{name: "metadata", value: "{"})
	add("body over the server limit", 413, nil, msg, formPart{name: "files", filename: "a", value: strings.Repeat("x", 1000)},
		formPart{name: "x1", value: strings.Repeat("y", 4000)}, formPart{name: "x2", value: strings.Repeat("y", 4000)},
		formPart{name: "x3", value: strings.Repeat("y", 4000)}, formPart{name: "x4", value: strings.Repeat("y", 4000)},
		formPart{name: "x5", value: strings.Repeat("y", 4000)}, formPart{name: "x6", value: strings.Repeat("y", 4000)},
		formPart{name: "x7", value: strings.Repeat("y", 4000)}, formPart{name: "x8", value: strings.Repeat("y", 4000)},
		formPart{name: "x9", value: strings.Repeat("y", 4000)}, formPart{name: "xa", value: strings.Repeat("y", 4000)},
		formPart{name: "xb", value: strings.Repeat("y", 4000)}, formPart{name: "xc", value: strings.Repeat("y", 4000)},
		formPart{name: "xd", value: strings.Repeat("y", 4000)}, formPart{name: "xe", value: strings.Repeat("y", 4000)},
		formPart{name: "xf", value: strings.Repeat("y", 4000)}, formPart{name: "xg", value: strings.Repeat("y", 4000)},
		formPart{name: "xh", value: strings.Repeat("y", 4000)})
	truncCT, full := mp(msg, formPart{name: "files", filename: "a", value: "abcdef"})
	tests = append(tests, struct {
		name   string
		ct     string
		body   []byte
		header map[string]string
		status int
	}{"truncated multipart", truncCT, full[:len(full)-20], nil, 422})

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{}
			if tt.ct != "" {
				h["Content-Type"] = tt.ct
			}
			for k, v := range tt.header {
				h[k] = v
			}
			res := do(t, "POST", endpoint, bytes.NewReader(tt.body), h)
			if res.status != tt.status {
				t.Fatalf("status %d %s, want %d", res.status, res.body, tt.status)
			}
			if d := res.detail(t); d == "" || !utf8.ValidString(d) {
				t.Errorf("detail %q", d)
			}
		})
	}
}

func TestDecodeRunForm_RejectsRepeatedIdempotencyKey(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "/agents/a/runs", strings.NewReader("message=hi"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Add("Idempotency-Key", "a")
	r.Header.Add("Idempotency-Key", "b")
	if _, err := decodeRunForm(r, formLimits{}); err == nil {
		t.Fatal("accepted two keys")
	}
}

func FuzzDecodeRunForm(f *testing.F) {
	ct, body := multipartBody(f, formPart{name: "message", value: "hi"}, formPart{name: "session_state", value: `{"a":1}`},
		formPart{name: "files", filename: "a.txt", value: "abc"})
	f.Add(ct, body, "")
	f.Add("application/x-www-form-urlencoded", []byte("message=hi&stream=false&metadata=%7B%7D"), "key")
	f.Add("application/x-www-form-urlencoded", []byte("message=%FF"), "")
	f.Add("multipart/form-data; boundary=x", []byte("--x\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhi\r\n--x--\r\n"), "")
	f.Add("multipart/form-data; boundary=x", []byte("--x\r\n"), "")
	f.Add("", []byte{}, "")
	f.Fuzz(func(t *testing.T, contentType string, body []byte, idem string) {
		r := httptest.NewRequest("POST", "/agents/a/runs", bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		if idem != "" {
			r.Header.Set("Idempotency-Key", idem)
		}
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 4096)
		req, err := decodeRunForm(r, formLimits{MaxFiles: 2, MaxFileBytes: 512, MaxFieldBytes: 1024, MaxParts: 16})
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) || he.Status < 400 || he.Status > 499 || he.Detail == "" {
				t.Fatalf("error %v is not a 4xx HTTPError", err)
			}
			return
		}
		if strings.TrimSpace(req.Message) == "" || !utf8.ValidString(req.Message) || len(req.Files) > 2 {
			t.Fatalf("accepted invalid request %+v", req)
		}
	})
}

func TestDecodeRunForm_IgnoresURLQuery(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "/agents/a/runs?message=from-query&"+url.Values{"user_id": {"x"}}.Encode(), strings.NewReader(""))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if _, err := decodeRunForm(r, formLimits{}); err == nil {
		t.Fatal("message read from the URL query")
	}
}
