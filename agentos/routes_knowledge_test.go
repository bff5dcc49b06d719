package agentos

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/knowledge"
)

type knowledgeFixture struct {
	url                  string
	d                    *db.DB
	k                    *knowledge.Knowledge
	alice, bob, shared   string // content ids
	aliceH, bobH, adminH map[string]string
}

func newKnowledgeFixture(t *testing.T, maxBytes int64) knowledgeFixture {
	t.Helper()
	d := testdbs.SQLite(t)
	k := testKnowledge(t, d, maxBytes)
	f := knowledgeFixture{d: d, k: k}
	for _, c := range []struct {
		user, text string
		id         *string
	}{{"alice", "alice notes: green tea brewing", &f.alice}, {"bob", "bob notes: Zürich trains", &f.bob}, {"", "shared notes: kettle handbook", &f.shared}} {
		res, err := k.Insert(context.Background(), knowledge.Content{Text: c.text, UserID: c.user, Metadata: map[string]any{"owner": c.user}})
		if err != nil {
			t.Fatal(err)
		}
		*c.id = res.Content.ID
	}
	ts, _ := testServer(t, Config{UserIsolation: true, Auth: Auth{Authenticator: rsaAuthenticator(t)}, DBs: []*db.DB{d}, Knowledge: []*knowledge.Knowledge{k}}, nil)
	f.url = ts.URL
	f.aliceH, f.bobH = bearer(rsToken(t, "alice")), bearer(rsToken(t, "bob"))
	f.adminH = bearer(rsToken(t, "root", auth.AdminScope))
	return f
}

func withCT(h map[string]string, ct string) map[string]string {
	out := map[string]string{"Content-Type": ct}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// TestKnowledgeRoutes_IsolationMatrix is the isolation matrix of the
// /knowledge routes: the owner and an admin reach alice's content; bob gets
// what a missing content gets and never sees it; shared content is readable
// by every user and writable by admins only (403 for users, as AgentOS);
// no token is 401.
func TestKnowledgeRoutes_IsolationMatrix(t *testing.T) {
	t.Parallel()
	probe := newKnowledgeFixture(t, 0)
	type tcase struct {
		name, method, path, body, ct string
		// status per caller: alice, bob, admin
		alice, bob, admin int
	}
	cases := func(f knowledgeFixture) []tcase {
		form := "application/x-www-form-urlencoded"
		return []tcase{
			{"list", "GET", "/knowledge/content", "", "", 200, 200, 200},
			{"get", "GET", "/knowledge/content/" + f.alice, "", "", 200, 404, 200},
			{"get shared", "GET", "/knowledge/content/" + f.shared, "", "", 200, 200, 200},
			{"status", "GET", "/knowledge/content/" + f.alice + "/status", "", "", 200, 200, 200},
			{"patch", "PATCH", "/knowledge/content/" + f.alice, "name=renamed", form, 200, 404, 200},
			{"patch shared", "PATCH", "/knowledge/content/" + f.shared, "name=renamed", form, 403, 403, 200},
			{"delete", "DELETE", "/knowledge/content/" + f.alice, "", "", 200, 404, 200},
			{"delete shared", "DELETE", "/knowledge/content/" + f.shared, "", "", 403, 403, 200},
			{"delete all", "DELETE", "/knowledge/content", "", "", 200, 200, 200},
			{"search", "POST", "/knowledge/search", `{"query":"notes tea trains kettle","max_results":10}`, "application/json", 200, 200, 200},
			{"upload", "POST", "/knowledge/content", "text_content=uploaded+text&name=up", form, 202, 202, 202},
			{"config", "GET", "/knowledge/config", "", "", 200, 200, 200},
		}
	}
	for i := range cases(probe) {
		for _, caller := range []string{owner, otherUser, admin, noToken} {
			t.Run(cases(probe)[i].name+"/"+caller, func(t *testing.T) {
				t.Parallel()
				f := newKnowledgeFixture(t, 0)
				c := cases(f)[i]
				h := map[string]map[string]string{owner: f.aliceH, otherUser: f.bobH, admin: f.adminH, noToken: nil}[caller]
				var body *strings.Reader
				if c.body != "" {
					body = strings.NewReader(c.body)
					h = withCT(h, c.ct)
				}
				var res response
				if body != nil {
					res = do(t, c.method, f.url+c.path, body, h)
				} else {
					res = do(t, c.method, f.url+c.path, nil, h)
				}
				want := map[string]int{owner: c.alice, otherUser: c.bob, admin: c.admin, noToken: 401}[caller]
				if res.status != want {
					t.Fatalf("%s %s as %s = %d %s, want %d", c.method, c.path, caller, res.status, res.body, want)
				}
				f.k.Wait()
				ctx := context.Background()
				aliceRow, aliceErr := f.d.GetKnowledgeContent(ctx, f.alice)
				sharedRow, sharedErr := f.d.GetKnowledgeContent(ctx, f.shared)
				switch caller {
				case otherUser:
					if strings.Contains(res.body, "green tea") || (res.status != 404 && c.name != "status" && strings.Contains(res.body, f.alice)) {
						t.Errorf("bob sees alice's content: %s", res.body)
					}
					if aliceErr != nil || aliceRow.Name != "alice notes: green tea brewing" {
						t.Errorf("bob changed alice's content: %+v %v", aliceRow, aliceErr)
					}
					if c.name == "status" && !strings.Contains(res.body, `"failed"`) {
						t.Errorf("bob's status of alice's content: %s", res.body)
					}
				case owner:
					if strings.Contains(res.body, "Zürich") || strings.Contains(res.body, f.bob) {
						t.Errorf("alice sees bob's content: %s", res.body)
					}
					if c.name == "list" || c.name == "search" {
						if !strings.Contains(res.body, "kettle") && !strings.Contains(res.body, f.shared) {
							t.Errorf("alice does not see shared content: %s", res.body)
						}
					}
				case admin:
					if c.name == "list" && !(strings.Contains(res.body, f.alice) && strings.Contains(res.body, f.bob)) {
						t.Errorf("admin does not see every user's content: %s", res.body)
					}
				case noToken:
					if aliceErr != nil || sharedErr != nil {
						t.Errorf("an unauthenticated call changed content")
					}
				}
				if caller != admin && (sharedErr != nil || sharedRow.Name != "shared notes: kettle handbook") {
					t.Errorf("%s changed shared content: %+v %v", caller, sharedRow, sharedErr)
				}
				if c.name == "upload" && caller != noToken {
					up := decode[contentView](t, res)
					row, err := f.d.GetKnowledgeContent(ctx, up.ID)
					wantUser := map[string]string{owner: "alice", otherUser: "bob", admin: ""}[caller]
					if err != nil || row.UserID != wantUser || row.Status != db.KnowledgeCompleted {
						t.Errorf("upload by %s stored %+v %v", caller, row, err)
					}
				}
			})
		}
	}
}

func knowledgeForm(t *testing.T, fields map[string]string, file string, data []byte) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	if file != "" {
		fw, _ := w.CreateFormFile("file", file)
		fw.Write(data)
	}
	w.Close()
	return &b, w.FormDataContentType()
}

func TestKnowledgeRoutes_MultipartUploadThenPollStatusThenSearch(t *testing.T) {
	t.Parallel()
	f := newKnowledgeFixture(t, 4096)
	body, ct := knowledgeForm(t, map[string]string{"name": "guide", "metadata": `{"lang":"en"}`, "chunker": "MarkdownChunker", "chunk_size": "200"},
		"guide.md", []byte("# Guide\n\nThe walrus sleeps on ice floes.\n"))
	res := do(t, "POST", f.url+"/knowledge/content", body, withCT(f.aliceH, ct))
	if res.status != 202 {
		t.Fatalf("upload = %d %s", res.status, res.body)
	}
	up := decode[contentView](t, res)
	if *up.Status != "processing" || *up.Name != "guide" || up.Metadata["lang"] != "en" {
		t.Fatalf("upload answer %s", res.body)
	}
	f.k.Wait()
	st := decode[contentStatusView](t, get(t, f.url+"/knowledge/content/"+up.ID+"/status", f.aliceH))
	if st.Status != "completed" {
		t.Fatalf("status %+v", st)
	}
	res = do(t, "POST", f.url+"/knowledge/search", strings.NewReader(`{"query":"walrus","search_type":"keyword","filters":{"lang":"en"}}`), withCT(f.aliceH, "application/json"))
	if res.status != 200 || !strings.Contains(res.body, "walrus") || !strings.Contains(res.body, `"total_count":1`) {
		t.Fatalf("search = %d %s", res.status, res.body)
	}
	// a bad upload is accepted, then FAILED with the reason
	body, ct = knowledgeForm(t, nil, "bad.txt", []byte{0xff, 0xfe, 0xfd})
	bad := decode[contentView](t, do(t, "POST", f.url+"/knowledge/content", body, withCT(f.aliceH, ct)))
	f.k.Wait()
	st = decode[contentStatusView](t, get(t, f.url+"/knowledge/content/"+bad.ID+"/status", f.aliceH))
	if st.Status != "failed" || !strings.Contains(st.StatusMessage, "UTF-8") {
		t.Fatalf("bad upload status %+v", st)
	}
	// over the size cap: 413 before anything is stored
	body, ct = knowledgeForm(t, nil, "big.txt", bytes.Repeat([]byte("x"), 4096+2<<20))
	if res := do(t, "POST", f.url+"/knowledge/content", body, withCT(f.aliceH, ct)); res.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized upload = %d %s", res.status, res.body)
	}
	// bad requests; filters are refused as the run form's knowledge_filters
	// are (422), Agno filter expressions included.
	for _, c := range []struct{ body, want, detail string }{
		{`{"query":""}`, "422", "query is required"},
		{`{"query":"x","search_type":"semantic"}`, "400", ""},
		{`{"query":"x","filters":{"a b":1}}`, "422", "filters: "},
		{`{"query":"x","filters":{"op":"EQ","key":"lang","value":"en"}}`, "422", `filter expressions ("op") are not supported`},
		{`{"query":"x","filters":[{"op":"EQ","key":"lang","value":"en"}]}`, "422", ""},
	} {
		res := do(t, "POST", f.url+"/knowledge/search", strings.NewReader(c.body), withCT(f.aliceH, "application/json"))
		if fmt.Sprint(res.status) != c.want || !strings.Contains(res.detail(t), c.detail) {
			t.Errorf("search %s = %d %s, want %s with %q", c.body, res.status, res.body, c.want, c.detail)
		}
	}
}

func TestKnowledgeRoutes_NoKnowledgeBaseIs404(t *testing.T) {
	t.Parallel()
	ts, _ := testServer(t, Config{}, nil)
	if res := get(t, ts.URL+"/knowledge/content", nil); res.status != 404 {
		t.Fatalf("= %d %s", res.status, res.body)
	}
}
