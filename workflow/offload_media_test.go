package workflow

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// The workflow's offload_tool_results and media_storage reach its steps'
// runs (those without their own), and its stored run keeps references.
func TestWorkflow_OffloadsStepResultsAndStoresMediaAsReferences(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	store, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	dump := tool.MustFunc(tool.FuncConfig{Name: "dump", Description: "Returns a lot."}, func(context.Context, struct{}) (string, error) {
		return strings.Repeat("logline dump\n", 6000), nil
	})
	step, err := agent.New(agent.Config{ID: "digger", DB: d, Tools: []tool.Tool{dump}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "dump"}}}, {Content: "dug"}}})})
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{ID: "wf", DB: d, Steps: []Step{{Runner: step}}, OffloadToolResults: &offload.Config{}, MediaStorage: store})
	if err != nil {
		t.Fatal(err)
	}
	img := make([]byte, 40_000)
	rand.Read(img)
	in := run.Input{InputContent: "dig", Images: []run.Media{{Content: img, MIMEType: "image/jpeg", Name: "map.jpg"}}}
	out, err := w.Run(context.Background(), in, agent.WithSessionID("s"), agent.WithRunID("wf-run"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run: %v", err)
	}
	rows := runsOf(t, d, "s")
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		s := string(r.RunData)
		if strings.Count(s, "logline dump") > 100 || strings.Contains(s, base64.StdEncoding.EncodeToString(img[:600])) || len(s) > 20_000 {
			t.Fatalf("run %s (%d bytes) keeps the result or the image inline", r.RunID, len(s))
		}
		if r.RunID == "wf-run" && !strings.Contains(s, `"media_reference"`) {
			t.Fatalf("workflow run has no reference: %.400s", s)
		}
		if r.RunID != "wf-run" && !strings.Contains(s, `<result id=\"res_`) {
			t.Fatalf("step run has no envelope: %.400s", s)
		}
	}
	name := media.Owner{DB: d.ID, Session: "s"}.Dir()
	if ok, err := store.Exists(context.Background(), name+hashName(img)); err != nil || !ok {
		t.Fatalf("the image is not in the storage: %v", err)
	}
	if _, err := New(Config{Steps: []Step{{Runner: step}}, OffloadToolResults: &offload.Config{}}); err == nil {
		t.Fatal("OffloadToolResults without a DB was accepted")
	}
}

func hashName(b []byte) string {
	ref, _ := media.Put(context.Background(), discard{}, media.Owner{Session: "x"}, "image", "image/jpeg", "map.jpg", b)
	return ref.MediaID
}

// discard is a storage that keeps nothing (to compute a reference's name).
type discard struct{ media.Storage }

func (discard) Exists(context.Context, string) (bool, error) { return true, nil }
func (discard) Backend() string                              { return "none" }
func (discard) Bucket() string                               { return "" }

// down fails every call, as an S3 that went away mid-run.
type down struct{ media.Storage }

func (down) Exists(context.Context, string) (bool, error) {
	return false, errors.New("dial tcp 127.0.0.1:9: connection refused")
}

func TestWorkflow_MediaStorageDownStoresTheRunAsErrorWithoutReferences(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	step, err := agent.New(agent.Config{ID: "s1", Model: scripted.Reply("ok")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{ID: "wf", DB: d, Steps: []Step{{Runner: step}}, MediaStorage: down{}})
	if err != nil {
		t.Fatal(err)
	}
	img := bytes.Repeat([]byte{0xff, 0xd8, 1}, 3000)
	_, err = w.Run(context.Background(), run.Input{InputContent: "x", Images: []run.Media{{Content: img, MIMEType: "image/jpeg"}}},
		agent.WithSessionID("s"), agent.WithRunID("wf-down"))
	if !errors.Is(err, agent.ErrMedia) || !errors.Is(err, media.ErrUnavailable) {
		t.Fatalf("error = %v", err)
	}
	row, err := d.GetRun(context.Background(), "wf-down")
	if err != nil {
		t.Fatal(err)
	}
	s := string(row.RunData)
	if row.Status != run.StatusError || !strings.Contains(s, "connection refused") || strings.Contains(s, "media_reference") ||
		strings.Contains(s, base64.StdEncoding.EncodeToString(img[:300])) {
		t.Fatalf("stored %s: %.400s", row.Status, s)
	}
}
