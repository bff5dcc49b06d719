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
