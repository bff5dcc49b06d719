package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/eval"
	"github.com/agentryhq/agentry/model/scripted"
)

// TestExamples_EveryFileLoadsAndServes: every examples/*.yaml loads through the
// loader `agentry serve --config` uses and is served as declared; every
// *.script.yaml loads as a scripted model. Not parallel: it sets the providers'
// key variables (examples/agentos.yaml's real-model agents are built, never
// called).
func TestExamples_EveryFileLoadsAndServes(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "unused-by-this-test")
	t.Setenv("ANTHROPIC_API_KEY", "unused-by-this-test")
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	served := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if strings.HasSuffix(f, ".script.yaml") {
				if _, err := scripted.Load(f); err != nil {
					t.Fatal(err)
				}
				return
			}
			if strings.HasSuffix(f, ".evals.yaml") { // eval cases (agentry eval)
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := eval.ParseSuite(data); err != nil {
					t.Fatal(err)
				}
				return
			}
			cfg, err := config.Load(f, func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			// Serve from an empty directory, as a new user would: a file naming
			// its own SQLite database (which its sql toolkit may read) gets it
			// there; the others get a fresh one.
			dir := t.TempDir()
			t.Chdir(dir)
			args := []string{"--config", f, "--port", "0", "--data-dir", filepath.Join(dir, "d")}
			if cfg.DB.DSN == "" {
				args = append(args, "--db", filepath.Join(dir, "a.db"))
			}
			base, stop := startServe(t, args...)
			info := getJSON[map[string]any](t, base+"/info")
			for key, want := range map[string][]string{
				"agents":    ids(cfg.Agents, func(a config.Agent) string { return a.ID }),
				"teams":     ids(cfg.Teams, func(a config.Team) string { return a.ID }),
				"workflows": ids(cfg.Workflows, func(a config.Workflow) string { return a.ID }),
			} {
				var got []string
				for _, v := range info[key].([]any) {
					got = append(got, v.(string))
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("/info %s = %v, want %v", key, got, want)
				}
			}
			if code, logs := stop(); code != 0 {
				t.Errorf("serve exit %d: %s", code, logs)
			}
			served++
		})
	}
	if served < 2 {
		t.Errorf("served %d example configurations, want agentos.yaml and offline.yaml", served)
	}
}

func ids[T any](items []T, id func(T) string) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, id(it))
	}
	slices.Sort(out)
	return out
}

// TestREADME_CurlExamplesWorkOffline sends every curl command of README.md's
// shell blocks, in order, to `agentry serve --config examples/offline.yaml`
// (localhost:7777 becomes the test server) and checks each answer: a 2xx, no
// failed run, and streams that end in a completed event.
func TestREADME_CurlExamplesWorkOffline(t *testing.T) {
	t.Parallel()
	cmds := readmeCommands(t)
	if !slices.ContainsFunc(cmds, func(c []string) bool {
		return slices.Equal(c, []string{"./agentry", "serve", "--config", "examples/offline.yaml", "&"})
	}) {
		t.Errorf("README.md does not start the tour's server with ./agentry serve --config examples/offline.yaml &")
	}
	dir := t.TempDir()
	base, stop := startServe(t, "--config", filepath.Join(repoRoot, "examples", "offline.yaml"), "--port", "0",
		"--db", filepath.Join(dir, "agentry.db"), "--data-dir", filepath.Join(dir, "data"))
	host := strings.TrimPrefix(base, "http://")
	n := 0
	for _, c := range cmds {
		if c[0] != "curl" {
			continue
		}
		n++
		req := curlRequest(t, c, host)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(c, " "), err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if err := checkAnswer(res, body); err != nil {
			t.Errorf("%s:\n  %d %v\n  %.400s", strings.Join(c, " "), res.StatusCode, err, body)
		}
	}
	if n < 7 {
		t.Errorf("found %d curl commands in README.md, want the tour's agent, session, team and workflow examples", n)
	}
	if code, logs := stop(); code != 0 {
		t.Errorf("serve exit %d: %s", code, logs)
	}
}

// TestREADME_CLIExamplesWorkOffline runs the tour's `./agentry run` and
// `./agentry runs list` commands in-process, with the repository's examples
// and a temporary database for ./agentry.db.
func TestREADME_CLIExamplesWorkOffline(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "agentry.db")
	n := 0
	for _, c := range readmeCommands(t) {
		if c[0] != "./agentry" || (c[1] != "run" && c[1] != "runs" && c[1] != "version" && c[1] != "--version") || slices.Contains(c, "get") {
			continue
		}
		if i := slices.Index(c, "--model"); i > 0 && !strings.HasPrefix(c[i+1], "scripted:") {
			continue // a real provider: needs a key or a local server
		}
		n++
		args := make([]string, 0, len(c)-1)
		for _, a := range c[1:] {
			a = strings.Replace(a, "./agentry.db", dbPath, 1)
			if rest, ok := strings.CutPrefix(a, "scripted:examples/"); ok {
				a = "scripted:" + filepath.Join(repoRoot, "examples", rest)
			} else if strings.HasPrefix(a, "examples/") {
				a = filepath.Join(repoRoot, a)
			}
			args = append(args, a)
		}
		if code, out, errOut := cli(t, args...); code != 0 || out == "" {
			t.Errorf("%s: exit %d\nstdout %q\nstderr %q", strings.Join(c, " "), code, out, errOut)
		}
	}
	if n < 4 {
		t.Errorf("found %d ./agentry run/runs/version commands in README.md, want the tour's", n)
	}
}

// TestREADME_NoBackgroundGoRun: `go run … &` backgrounds the go command, not
// the server it starts; `kill $!` would leave the server running.
func TestREADME_NoBackgroundGoRun(t *testing.T) {
	t.Parallel()
	for _, c := range readmeCommands(t) {
		if len(c) > 2 && c[0] == "go" && c[1] == "run" && c[len(c)-1] == "&" {
			t.Errorf("README.md backgrounds go run: %s", strings.Join(c, " "))
		}
	}
}

// readmeCommands splits the commands of README.md's ```sh blocks into words,
// joining continued lines and dropping comments.
func readmeCommands(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	inSh := false
	var line string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		text := sc.Text()
		switch {
		case strings.HasPrefix(text, "```"):
			inSh = strings.TrimPrefix(text, "```") == "sh"
			continue
		case !inSh:
			continue
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			line += cont + " "
			continue
		}
		line += text
		words, err := shellWords(line)
		if err != nil {
			t.Fatalf("README.md: %q: %v", line, err)
		}
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		line = ""
	}
	return cmds
}

// shellWords splits one POSIX shell line the way sh would for the README's
// simple commands: single and double quotes, backslash escapes, # comments.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '#' && !inWord:
			return words, nil
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed '")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i, inWord = i+1+j, true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf(`unclosed "`)
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// curlRequest builds the request a curl command line sends (the options the
// README uses: -s, -N, -d, -F, -H, -X), aimed at host instead of localhost:7777.
func curlRequest(t *testing.T, c []string, host string) *http.Request {
	t.Helper()
	var target, method string
	var data, forms []string
	header := http.Header{}
	for i := 1; i < len(c); i++ {
		switch a := c[i]; a {
		case "-s", "-N", "-sN", "-Ns":
		case "-d", "-F", "-H", "-X":
			if i+1 >= len(c) {
				t.Fatalf("%v: %s needs a value", c, a)
			}
			i++
			switch a {
			case "-d":
				data = append(data, c[i])
			case "-F":
				forms = append(forms, c[i])
			case "-H":
				k, v, _ := strings.Cut(c[i], ":")
				header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			case "-X":
				method = c[i]
			}
		default:
			if strings.HasPrefix(a, "-") || target != "" {
				t.Fatalf("%v: curl option %q is not understood by this test; extend curlRequest", c, a)
			}
			target = a
		}
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	u, err := url.Parse(target)
	if err != nil || u.Host != "localhost:7777" {
		t.Fatalf("%v: target %q is not localhost:7777", c, target)
	}
	u.Host = host
	var body io.Reader
	switch {
	case len(data) > 0:
		body = strings.NewReader(strings.Join(data, "&"))
		header.Set("Content-Type", "application/x-www-form-urlencoded")
	case len(forms) > 0:
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, f := range forms {
			k, v, _ := strings.Cut(f, "=")
			mw.WriteField(k, v)
		}
		mw.Close()
		body = &buf
		header.Set("Content-Type", mw.FormDataContentType())
	}
	if method == "" {
		method = http.MethodGet
		if body != nil {
			method = http.MethodPost
		}
	}
	req, err := http.NewRequest(method, u.String(), body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return req
}

// checkAnswer accepts a 2xx whose run (if any) did not fail and whose stream
// (if any) ends in a completed event.
func checkAnswer(res *http.Response, body []byte) error {
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		var events []string
		for l := range strings.Lines(string(body)) {
			if ev, ok := strings.CutPrefix(strings.TrimSpace(l), "event: "); ok {
				events = append(events, ev)
			}
		}
		if len(events) == 0 || !strings.HasSuffix(events[len(events)-1], "Completed") {
			return fmt.Errorf("stream does not end in a completed event: %v", events)
		}
		for _, ev := range events {
			if strings.Contains(ev, "Error") {
				return fmt.Errorf("stream has %s", ev)
			}
		}
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if m, ok := v.(map[string]any); ok && (m["status"] == "ERROR" || m["status"] == "CANCELLED") {
		return fmt.Errorf("run status %v", m["status"])
	}
	return nil
}
