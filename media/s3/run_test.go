package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/s3"
	"github.com/agentryhq/agentry/media/s3/s3test"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

func jpeg(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	copy(b, []byte{0xff, 0xd8, 0xff, 0xe0})
	return b
}

func TestS3_RunWithA113KBJPEGIsStoredAsAReferenceAndReloaded(t *testing.T) {
	t.Parallel()
	store, _ := s3test.Proxied(t, 0)
	d := testdbs.SQLite(t)
	img := jpeg(113 << 10)
	a, err := agent.New(agent.Config{ID: "viewer", Model: scripted.Reply("a cat"), DB: d, MediaStorage: store, AddHistoryToContext: true})
	if err != nil {
		t.Fatal(err)
	}
	in := run.Input{InputContent: "what is this?", Images: []run.Media{{Content: img, MIMEType: "image/jpeg", Name: "cat.jpg"}}}
	if _, err := a.Run(context.Background(), in, agent.WithSessionID("s1"), agent.WithRunID("s3-jpeg-run")); err != nil {
		t.Fatal(err)
	}
	row, err := d.GetRun(context.Background(), "s3-jpeg-run")
	if err != nil {
		t.Fatal(err)
	}
	var stored struct {
		Input struct {
			Images []struct {
				Ref *media.Reference `json:"media_reference"`
			} `json:"images"`
		} `json:"input"`
	}
	if err := json.Unmarshal(row.RunData, &stored); err != nil || len(stored.Input.Images) != 1 || stored.Input.Images[0].Ref == nil {
		t.Fatalf("stored: %v %.300s", err, row.RunData)
	}
	ref := stored.Input.Images[0].Ref
	if ref.StorageBackend != "s3" || ref.Bucket != store.Bucket() || ref.URL != "" || len(row.RunData) > 5000 {
		t.Fatalf("reference %+v in %d bytes", ref, len(row.RunData))
	}
	got, err := media.Get(context.Background(), store, ref)
	if err != nil || !bytes.Equal(got, img) {
		t.Fatalf("object: %v", err)
	}
	// a restarted process (new agent, new client) reads it back into history
	reopened, err := s3.New(context.Background(), testConfigFor(store))
	if err != nil {
		t.Fatal(err)
	}
	var sawImage bool
	probe := &probeModel{Model: scripted.Reply("still a cat"), seen: func(b []byte) { sawImage = sawImage || bytes.Equal(b, img) }}
	a2, err := agent.New(agent.Config{ID: "viewer", Model: probe, DB: d, MediaStorage: reopened, AddHistoryToContext: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a2.Run(context.Background(), run.TextInput("and now?"), agent.WithSessionID("s1")); err != nil {
		t.Fatal(err)
	}
	if !sawImage {
		t.Fatal("history did not bring the image back from S3")
	}
}

func TestS3_DownMidRunStoresErrorWithoutAReference(t *testing.T) {
	t.Parallel()
	store, proxy := s3test.Proxied(t, 0)
	d := testdbs.SQLite(t)
	cut := tool.MustFunc(tool.FuncConfig{Name: "cut", Description: "Takes S3 down."}, func(context.Context, struct{}) (string, error) {
		proxy.Cut()
		return "done", nil
	})
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "cut"}}}, {Content: "answer"}}})
	a, err := agent.New(agent.Config{Model: m, DB: d, MediaStorage: store, Tools: []tool.Tool{cut}})
	if err != nil {
		t.Fatal(err)
	}
	in := run.Input{InputContent: "x", Images: []run.Media{{Content: jpeg(50_000), MIMEType: "image/jpeg"}}}
	out, err := a.Run(context.Background(), in, agent.WithSessionID("s1"), agent.WithRunID("s3-down-run"))
	if !errors.Is(err, agent.ErrMedia) || !errors.Is(err, media.ErrUnavailable) || out.Status != run.StatusError {
		t.Fatalf("run: %v, status %s", err, out.Status)
	}
	row, err := d.GetRun(context.Background(), "s3-down-run")
	if err != nil {
		t.Fatal(err)
	}
	s := string(row.RunData)
	if row.Status != run.StatusError || !strings.Contains(s, "media storage failed") || strings.Contains(s, "media_reference") || len(s) > 5000 {
		t.Fatalf("stored %s: %.400s", row.Status, s)
	}
}
