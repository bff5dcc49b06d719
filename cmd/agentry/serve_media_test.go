package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"path/filepath"
	"strings"
	"testing"
)

// postImage runs agentID with a JPEG attached and returns the run's JSON.
func postImage(t *testing.T, base, agentID string, img []byte) map[string]any {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("message", "what is this?")
	mw.WriteField("stream", "false")
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="files"; filename="cat.jpg"`)
	h.Set("Content-Type", "image/jpeg")
	part, _ := mw.CreatePart(h)
	part.Write(img)
	mw.Close()
	res, err := http.Post(base+"/agents/"+agentID+"/runs", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != 200 || out["status"] != "COMPLETED" {
		t.Fatalf("run = %d %v", res.StatusCode, out)
	}
	return out
}

func storedRuns(t *testing.T, base, sid string) string {
	t.Helper()
	runs, err := http.Get(base + "/sessions/" + sid + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	defer runs.Body.Close()
	b, _ := io.ReadAll(runs.Body)
	return string(b)
}

func TestServe_MediaStoragePerAgentOverridesTheServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := writeFile(t, "s.yaml", "turns:\n  - content: a cat\n")
	cfg := writeFile(t, "os.yaml", "agents:\n  - id: keeps\n    model: scripted:"+script+"\n  - id: inline\n    model: scripted:"+script+"\n    media_storage: {type: none}\n")
	base, stop := startServe(t, "--config", cfg, "--port", "0", "--db", filepath.Join(dir, "a.db"), "--data-dir", filepath.Join(dir, "d"))
	defer stop()
	img := make([]byte, 50_000)
	rand.Read(img)
	keeps := storedRuns(t, base, postImage(t, base, "keeps", img)["session_id"].(string))
	inline := storedRuns(t, base, postImage(t, base, "inline", img)["session_id"].(string))
	if !strings.Contains(keeps, `"media_reference"`) || len(keeps) > 8000 {
		t.Fatalf("server default did not offload (%d bytes)", len(keeps))
	}
	if strings.Contains(inline, `"media_reference"`) || len(inline) < 50_000 {
		t.Fatalf("media_storage: none still offloaded (%d bytes)", len(inline))
	}
}

func TestServe_OffloadsMediaToTheDataDirAndServesItAfterARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	args := []string{"--port", "0", "--db", filepath.Join(dir, "agentry.db"), "--data-dir", dataDir}
	base, stop := startServe(t, args...)

	img := make([]byte, 113<<10)
	rand.Read(img)
	copy(img, []byte{0xff, 0xd8, 0xff, 0xe0})
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("message", "what is this?")
	mw.WriteField("stream", "false")
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="files"; filename="cat.jpg"`)
	h.Set("Content-Type", "image/jpeg")
	part, _ := mw.CreatePart(h)
	part.Write(img)
	mw.Close()
	res, err := http.Post(base+"/agents/"+demoAgentID+"/runs", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	res.Body.Close()
	if res.StatusCode != 200 || out["status"] != "COMPLETED" {
		t.Fatalf("run = %d %v", res.StatusCode, out)
	}
	sid := out["session_id"].(string)

	var objects []string
	filepath.WalkDir(filepath.Join(dataDir, "media"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			objects = append(objects, filepath.Base(p))
		}
		return nil
	})
	if len(objects) != 1 || !strings.HasSuffix(objects[0], ".jpg") {
		t.Fatalf("objects under the data dir: %v", objects)
	}
	runs, err := http.Get(base + "/sessions/" + sid + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(runs.Body)
	runs.Body.Close()
	if !strings.Contains(string(stored), `"media_reference"`) || len(stored) > 8000 {
		t.Fatalf("stored runs (%d bytes): %.500s", len(stored), stored)
	}
	if code, _ := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}

	base, stop = startServe(t, args...)
	defer stop()
	got, err := http.Get(base + "/sessions/" + sid + "/media/" + objects[0])
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if got.StatusCode != 200 || !bytes.Equal(b, img) {
		t.Fatalf("media after restart: %d, %d bytes", got.StatusCode, len(b))
	}
	if res, _ := http.Get(base + "/sessions/other/media/" + objects[0]); res.StatusCode != 404 {
		t.Fatalf("another session's route: %d", res.StatusCode)
	}
}
