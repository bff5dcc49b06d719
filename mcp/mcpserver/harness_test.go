package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
)

// testSecret signs the harness's HS256 tokens.
var testSecret = []byte("mcpserver-test-secret-0123456789abcdef")

// harness serves a Server on a loopback HTTP server behind a small
// authentication middleware built on auth.JWTVerifier, as AgentOS mounts it:
// the bearer token becomes the request's principal and, for a non-admin,
// the database scope.
type harness struct {
	url      string
	db       *db.DB
	srv      *Server
	logs     *syncBuffer
	verifier *auth.JWTVerifier
}

type harnessConfig struct {
	db      *db.DB
	leeway  *time.Duration
	options Options
	authz   bool
	// excluded serves requests without a token unauthenticated, as AgentOS
	// serves a path listed in excluded_route_paths.
	excluded bool
	// cookie reads the token from the access_token cookie only, as AgentOS
	// with token_source: cookie (an Authorization header is not looked at).
	cookie bool
	// agents and teams are served next to the echo agent; build builds
	// them on the harness's database.
	build func(d *db.DB) ([]*agent.Agent, []*team.Team)
	// begin and observeCall, when set, are the Config's Begin and
	// ObserveCall.
	begin       func(ctx context.Context, t Target, runID, userID string) (context.Context, func(), error)
	observeCall func(ctx context.Context, t Target, runID, sessionID, userID string, call func(context.Context) (*run.Output, error)) (*run.Output, error)
}

func newHarness(t *testing.T, hc harnessConfig) *harness {
	t.Helper()
	h := &harness{db: hc.db, logs: &syncBuffer{}}
	if h.db == nil {
		d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db"), ID: "test-db"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		h.db = d
	}
	key, err := auth.ParseKey("", string(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	if h.verifier, err = auth.NewJWTVerifier(auth.JWTConfig{Keys: []auth.Key{key}, Algorithms: []string{"HS256"}, Leeway: hc.leeway}); err != nil {
		t.Fatal(err)
	}
	echo, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("hi there"), DB: h.db})
	if err != nil {
		t.Fatal(err)
	}
	var agents []*agent.Agent
	var teams []*team.Team
	if hc.build != nil {
		agents, teams = hc.build(h.db)
	}
	h.srv, err = New(Config{
		Agents: append([]*agent.Agent{echo}, agents...), Teams: teams, DBs: []*db.DB{h.db}, Options: hc.options, Authorization: hc.authz,
		Scope: func(ctx context.Context) (context.Context, error) {
			if p, ok := auth.FromContext(ctx); ok && !p.Admin {
				return db.WithUserScope(ctx, p.UserID), nil
			}
			return ctx, nil
		},
		Begin: hc.begin, ObserveCall: hc.observeCall,
		Logger: slog.New(slog.NewTextHandler(h.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hc.excluded && r.Header.Get("Authorization") == "" {
			h.srv.ServeHTTP(w, r)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if hc.cookie {
			c, err := r.Cookie("access_token")
			tok, ok = "", err == nil
			if ok {
				tok = c.Value
			}
		}
		if !ok {
			http.Error(w, "authorization header required", http.StatusUnauthorized)
			return
		}
		p, err := h.verifier.Verify(tok)
		if err != nil {
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		h.srv.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), p)))
	}))
	t.Cleanup(ts.Close)
	h.url = ts.URL
	return h
}

// token signs an HS256 token for user with the given exp and scopes.
func token(t *testing.T, user string, exp time.Time, scopes ...string) string {
	t.Helper()
	c := jwt.MapClaims{"sub": user, "exp": exp.Unix(), "iat": time.Now().Add(-time.Minute).Unix()}
	if len(scopes) > 0 {
		c["scopes"] = scopes
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token == "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens a go-sdk client session with tok ("" for none).
func (h *harness) connect(t *testing.T, tok string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	hc := &http.Client{Transport: bearer{token: tok, next: http.DefaultTransport}}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url, HTTPClient: hc}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func (h *harness) mustConnect(t *testing.T, tok string) *mcp.ClientSession {
	t.Helper()
	cs, err := h.connect(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// syncBuffer is a log destination tests read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// structuredMap is a result's structured content as a JSON object.
func structuredMap(t *testing.T, r *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return m
}
