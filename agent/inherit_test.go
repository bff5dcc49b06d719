package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// A run given a caller's settings with WithStorageDefaults (a team's
// member, a workflow's step) offloads and references like the caller.
func TestWithStorageDefaults_RunOffloadsAndReferencesLikeItsCaller(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	store, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	off, err := offload.New(d, offload.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dump := tool.MustFunc(tool.FuncConfig{Name: "dump", Description: "Returns a lot."}, func(context.Context, struct{}) (string, error) {
		return strings.Repeat("logline\n", 10_000), nil
	})
	rec := &recorder{Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "dump"}}}, scripted.Turn{Content: "done"})}
	a := mustAgent(t, Config{ID: "member", Model: rec, DB: d, Tools: []tool.Tool{dump}})
	img := jpeg(20_000)
	in := run.Input{InputContent: "look", Images: []run.Media{{Content: img, MIMEType: "image/jpeg"}}}
	out, err := a.Run(context.Background(), in, WithSessionID("s1"), WithRunID("inherit-r1"), WithStorageDefaults(off, store))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run: %v", err)
	}
	reqs := rec.requests()
	if !strings.Contains(reqs[0][0].Content, "read_result") {
		t.Fatal("the system message does not explain the envelope")
	}
	last := reqs[1][len(reqs[1])-1]
	if last.Role != model.RoleTool || !strings.HasPrefix(last.Content, `<result id="res_`) {
		t.Fatalf("the model got the whole result: %.200s", last.Content)
	}
	row, err := d.GetRun(context.Background(), "inherit-r1")
	if err != nil {
		t.Fatal(err)
	}
	s := string(row.RunData)
	if len(s) > 20_000 || !strings.Contains(s, "media_reference") || strings.Contains(s, base64.StdEncoding.EncodeToString(img[:300])) {
		t.Fatalf("stored run (%d bytes) keeps the result or the image inline", len(s))
	}
	// without the option the same agent keeps both inline
	rec2 := &recorder{Model: script(t, scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "dump"}}}, scripted.Turn{Content: "done"})}
	b := mustAgent(t, Config{ID: "member", Model: rec2, DB: d, Tools: []tool.Tool{dump}})
	if _, err := b.Run(context.Background(), in, WithSessionID("s2"), WithRunID("inherit-r2")); err != nil {
		t.Fatal(err)
	}
	if row, _ := d.GetRun(context.Background(), "inherit-r2"); len(row.RunData) < 80_000 {
		t.Fatalf("without defaults the run was offloaded (%d bytes)", len(row.RunData))
	}
}

// A team run's member_responses hold the member runs as returned, with
// their bytes: the leader's persist references them like its own media.
func TestMedia_MemberResponsesAreStoredWithReferences(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	store, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	img, pdf := jpeg(30_000), append([]byte("%PDF-1.4\n"), jpeg(5000)...)
	member := run.Output{RunID: "m1", SessionID: "s1", AgentID: "m", Status: run.StatusCompleted,
		Input:    &run.Input{InputContent: "see", Images: []run.Media{{Content: img, MIMEType: "image/jpeg"}}},
		Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartFile, Data: pdf, MIMEType: "application/pdf"}}}}}
	raw, err := json.Marshal(member)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := json.Marshal(run.Output{RunID: "m2", SessionID: "s1", AgentID: "m", Status: run.StatusCompleted, Content: "no media"})
	hook := func(_ context.Context, out *run.Output) { out.MemberResponses = []json.RawMessage{raw, plain} }
	a := mustAgent(t, Config{ID: "lead", Model: scripted.Reply("ok"), DB: d, MediaStorage: store, BeforeStore: hook})
	if _, err := a.Run(context.Background(), run.TextInput("go"), WithSessionID("s1"), WithRunID("lead-r1")); err != nil {
		t.Fatal(err)
	}
	row, err := d.GetRun(context.Background(), "lead-r1")
	if err != nil {
		t.Fatal(err)
	}
	var stored run.Output
	if err := json.Unmarshal(row.RunData, &stored); err != nil || len(stored.MemberResponses) != 2 {
		t.Fatalf("stored: %v, %d member responses", err, len(stored.MemberResponses))
	}
	var m run.Output
	if err := json.Unmarshal(stored.MemberResponses[0], &m); err != nil {
		t.Fatal(err)
	}
	if len(row.RunData) > 6000 || m.Input.Images[0].Content != nil || len(m.Input.Images[0].Extra["media_reference"]) == 0 ||
		m.Messages[0].Parts[0].Data != nil || len(m.Messages[0].Parts[0].MediaReference) == 0 {
		t.Fatalf("member response keeps bytes (%d bytes stored): %.300s", len(row.RunData), stored.MemberResponses[0])
	}
	var ref media.Reference
	if err := json.Unmarshal(m.Messages[0].Parts[0].MediaReference, &ref); err != nil {
		t.Fatal(err)
	}
	if got, err := media.Get(context.Background(), store, &ref); err != nil || !bytes.Equal(got, pdf) {
		t.Fatalf("the member's file is not in the storage: %v", err)
	}
	if !strings.Contains(string(stored.MemberResponses[1]), `"no media"`) {
		t.Fatalf("a member response without media changed: %s", stored.MemberResponses[1])
	}
}
