package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

// setup makes root/ (the toolkit's root) next to outside/ (a secret the
// model must never reach) and returns the set and both directories.
func setup(t *testing.T, cfg Config) (*tool.Set, string, string) {
	t.Helper()
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "docs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret.txt"), "TOP SECRET")
	write(filepath.Join(root, "readme.md"), "# Project\nAgentry reads files.\nThe end.\n")
	write(filepath.Join(root, "docs", "guide.md"), "line one\nline two mentions Agentry\nline three\n")
	write(filepath.Join(root, "blob.bin"), "\x00\x01\x02binary")
	write(filepath.Join(root, "big.txt"), strings.Repeat("0123456789\n", 20_000))
	for _, l := range []struct{ target, name string }{
		{filepath.Join(outside, "secret.txt"), "leak.txt"},
		{outside, "leakdir"},
		{"../outside/secret.txt", "relleak.txt"},
	} {
		if err := os.Symlink(l.target, filepath.Join(root, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Root = root
	k, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	kit, err := k.Toolkit()
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(nil, kit)
	if err != nil {
		t.Fatal(err)
	}
	return set, root, outside
}

func run(set *tool.Set, name, args string) tool.Result {
	return set.Execute(context.Background(), model.ToolCall{ID: "c", Name: name, Arguments: args})
}

func TestFiles_ReadWriteListSearch(t *testing.T) {
	t.Parallel()
	set, root, _ := setup(t, Config{})
	if res := run(set, "save_file", `{"file_name":"notes/today.md","contents":"buy milk\n"}`); res.Err != nil {
		t.Fatal(res.Err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "notes", "today.md")); string(b) != "buy milk\n" {
		t.Fatalf("file holds %q", b)
	}
	if res := run(set, "save_file", `{"file_name":"notes/today.md","contents":"x","overwrite":false}`); res.Err == nil || !strings.Contains(res.Content, "exists") {
		t.Errorf("overwrite false replaced the file: %s", res.Content)
	}
	if res := run(set, "read_file", `{"file_name":"readme.md"}`); res.Content != "# Project\nAgentry reads files.\nThe end.\n" {
		t.Errorf("read_file = %q, %v", res.Content, res.Err)
	}
	if res := run(set, "read_file_chunk", `{"file_name":"docs/guide.md","start_line":2,"end_line":3}`); res.Content != "line two mentions Agentry\nline three\n" {
		t.Errorf("read_file_chunk = %q, %v", res.Content, res.Err)
	}
	res := run(set, "list_files", `{}`)
	var names []string
	json.Unmarshal([]byte(res.Content), &names)
	if !strings.Contains(res.Content, `"docs/"`) || !strings.Contains(res.Content, `"readme.md"`) {
		t.Errorf("list_files = %s", res.Content)
	}
	if res := run(set, "search_files", `{"pattern":"*.md"}`); res.Content != `["docs/guide.md","notes/today.md","readme.md"]` {
		t.Errorf("search_files = %s %v", res.Content, res.Err)
	}
	if res := run(set, "search_files", `{"pattern":"docs/*.md"}`); res.Content != `["docs/guide.md"]` {
		t.Errorf("search_files with a path = %s", res.Content)
	}
	res = run(set, "search_content", `{"query":"agentry"}`)
	var got []match
	json.Unmarshal([]byte(res.Content), &got)
	if len(got) != 2 || got[0] != (match{File: "docs/guide.md", Line: 2, Text: "line two mentions Agentry"}) {
		t.Errorf("search_content = %s %v", res.Content, res.Err)
	}
}

// TestFiles_BadInput: traversal, absolute paths, symlinks out of the root and
// oversized input all fail, and nothing outside the root is read or written.
func TestFiles_BadInput(t *testing.T) {
	t.Parallel()
	set, root, outside := setup(t, Config{MaxWriteBytes: 1000})
	tests := []struct {
		name, tool, args, wantErr string
	}{
		{"dot-dot read", "read_file", `{"file_name":"../outside/secret.txt"}`, "uses .."},
		{"dot-dot inside a path", "read_file", `{"file_name":"docs/../../outside/secret.txt"}`, "uses .."},
		{"absolute read", "read_file", `{"file_name":"/etc/passwd"}`, "absolute"},
		{"symlink to a file outside", "read_file", `{"file_name":"leak.txt"}`, "out of the root"},
		{"relative symlink outside", "read_file", `{"file_name":"relleak.txt"}`, "out of the root"},
		{"symlinked directory outside", "read_file", `{"file_name":"leakdir/secret.txt"}`, "out of the root"},
		{"list outside", "list_files", `{"directory":"../outside"}`, "uses .."},
		{"list through a symlink", "list_files", `{"directory":"leakdir"}`, "out of the root"},
		{"write outside", "save_file", `{"file_name":"../outside/x.txt","contents":"x"}`, "uses .."},
		{"write through a symlink", "save_file", `{"file_name":"leakdir/x.txt","contents":"x"}`, "out of the root"},
		{"overwrite a symlinked file", "save_file", `{"file_name":"leak.txt","contents":"pwned"}`, "out of the root"},
		{"absolute write", "save_file", `{"file_name":"/tmp/x.txt","contents":"x"}`, "absolute"},
		{"NUL in a path", "read_file", `{"file_name":"readme.md\u0000.txt"}`, "NUL"},
		{"search outside", "search_content", `{"query":"SECRET","directory":"../outside"}`, "uses .."},
		{"glob outside", "search_files", `{"pattern":"../outside/*"}`, "uses .."},
		{"bad glob", "search_files", `{"pattern":"[z-a"}`, "not a glob"},
		{"huge write", "save_file", `{"file_name":"big.out","contents":"` + strings.Repeat("x", 5000) + `"}`, "at most 1000"},
		{"binary read", "read_file", `{"file_name":"blob.bin"}`, "binary"},
		{"missing file", "read_file", `{"file_name":"nope.txt"}`, "does not exist"},
		{"directory as a file", "read_file", `{"file_name":"docs"}`, "not a regular file"},
		{"bad line range", "read_file_chunk", `{"file_name":"readme.md","start_line":0,"end_line":2}`, "counts from 1"},
		{"empty query", "search_content", `{"query":"  "}`, "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := run(set, tc.tool, tc.args)
			if res.Err == nil || !strings.Contains(res.Content, tc.wantErr) {
				t.Fatalf("content %q, err %v; want an error containing %q", res.Content, res.Err, tc.wantErr)
			}
			if strings.Contains(res.Content, "TOP SECRET") {
				t.Fatal("secret leaked")
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "TOP SECRET" {
		t.Errorf("the file outside was changed: %q", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("files were created outside the root: %v", entries)
	}
	// Searches skip symlinks instead of following them out.
	if res := run(set, "search_content", `{"query":"SECRET"}`); res.Content != "[]" {
		t.Errorf("search_content followed a symlink out: %s", res.Content)
	}
	_ = root
}

func TestFiles_HugeOutputsAreCapped(t *testing.T) {
	t.Parallel()
	set, root, _ := setup(t, Config{MaxOutput: 5000, MaxEntries: 20})
	res := run(set, "read_file", `{"file_name":"big.txt"}`)
	if res.Err != nil || len(res.Content) > 5200 || !strings.Contains(res.Content, "read_file_chunk") {
		t.Errorf("read_file of 220 kB returned %d bytes: %.80q", len(res.Content), res.Content)
	}
	res = run(set, "read_file_chunk", `{"file_name":"big.txt","start_line":1,"end_line":100000}`)
	if res.Err != nil || len(res.Content) > 5200 || !strings.Contains(res.Content, "truncated") {
		t.Errorf("read_file_chunk returned %d bytes", len(res.Content))
	}
	for i := range 50 {
		os.WriteFile(filepath.Join(root, "docs", fmt.Sprintf("n%02d.md", i)), []byte("needle\n"), 0o644)
	}
	res = run(set, "list_files", `{"directory":"docs"}`)
	var names []string
	json.Unmarshal([]byte(res.Content), &names)
	if len(names) != 21 || !strings.Contains(names[20], "more entries") {
		t.Errorf("list_files returned %d entries", len(names))
	}
	res = run(set, "search_content", `{"query":"needle","limit":1000}`)
	var got []match
	json.Unmarshal([]byte(res.Content), &got)
	if len(got) != 20 {
		t.Errorf("search_content returned %d matches, want the cap of 20", len(got))
	}
}

func TestNew_NeedsAnExistingRoot(t *testing.T) {
	t.Parallel()
	for _, root := range []string{"", filepath.Join(t.TempDir(), "missing")} {
		if _, err := New(Config{Root: root}); err == nil {
			t.Errorf("root %q accepted", root)
		}
	}
	_, err := rel("../x")
	if !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("rel: %v", err)
	}
}

// A named pipe under the root (made by a shell tool, or by the user) is
// refused by every tool that opens a file: opening one blocks until a
// writer (or reader) comes, and read_file, read_file_chunk and save_file
// hung there, for good, in a goroutine no timeout could end.
func TestFiles_NamedPipeIsRefusedNotOpened(t *testing.T) {
	t.Parallel()
	set, root, _ := setup(t, Config{})
	fifo := filepath.Join(root, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"file_name":"pipe"}`},
		{"read_file_chunk", `{"file_name":"pipe","start_line":1,"end_line":2}`},
		{"save_file", `{"file_name":"pipe","contents":"x"}`},
	} {
		done := make(chan tool.Result, 1)
		go func() { done <- run(set, c.tool, c.args) }()
		select {
		case res := <-done:
			if res.Err == nil || !strings.Contains(res.Content, "not a regular file") {
				t.Errorf("%s on a named pipe = %q, %v; want refused as not a regular file", c.tool, res.Content, res.Err)
			}
		case <-time.After(10 * time.Second):
			// Let the blocked open go: a peer end of the pipe, opened and
			// closed (a read then ends at EOF, a write with EPIPE).
			if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
				f.Close()
			}
			t.Errorf("%s on a named pipe blocked", c.tool)
			<-done
		}
	}
}

// A regular file replaced by a named pipe between openRegular's Stat and
// its open (by a shell tool running beside, say) is refused too: the open
// does not wait for a writer (O_NONBLOCK), and its fstat sees the pipe.
// The open blocked for good in that window.
func TestFiles_NamedPipeSwappedInAfterTheCheckIsRefused(t *testing.T) {
	set, root, _ := setup(t, Config{})
	path := filepath.Join(root, "notes.txt")
	afterStat = func(string) {
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { afterStat = nil })
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"file_name":"notes.txt"}`},
		{"save_file", `{"file_name":"notes.txt","contents":"x"}`},
	} {
		if err := os.WriteFile(path, []byte("hello"), 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan tool.Result, 1)
		go func() { done <- run(set, c.tool, c.args) }()
		select {
		case res := <-done:
			if res.Err == nil || !strings.Contains(res.Content, "not a regular file") {
				t.Errorf("%s of a file swapped for a named pipe = %q, %v; want refused", c.tool, res.Content, res.Err)
			}
		case <-time.After(10 * time.Second):
			if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
				f.Close() // let the blocked open go
			}
			t.Errorf("%s of a file swapped for a named pipe blocked in open", c.tool)
			<-done
		}
		os.Remove(path)
	}
}

// Models write Agno's pathlib globs: "**/*.md" is every Markdown file, at
// any depth, the root's included. path.Match read "**" as "*", so it found
// only files exactly one directory deep; and "./docs/*.md" found nothing.
func TestSearchFiles_DoubleStarMatchesAnyDepth(t *testing.T) {
	t.Parallel()
	set, root, _ := setup(t, Config{})
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a/b/deep.md", "a/b/deep.txt", "a/top.md"} {
		if err := os.WriteFile(filepath.Join(root, p), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ pattern, want string }{
		{"**/*.md", `["a/b/deep.md","a/top.md","docs/guide.md","readme.md"]`},
		{"a/**/*.md", `["a/b/deep.md","a/top.md"]`},
		{"a/**", `["a/b/deep.md","a/b/deep.txt","a/top.md"]`},
		{"**/b/*", `["a/b/deep.md","a/b/deep.txt"]`},
		{"**/**/deep.*", `["a/b/deep.md","a/b/deep.txt"]`},
		{"./docs/*.md", `["docs/guide.md"]`},
		{"a/*.md", `["a/top.md"]`},
		{strings.Repeat("**/", 200) + "x.md", `[]`}, // no blow-up on many **
	}
	for _, tc := range tests {
		if res := run(set, "search_files", fmt.Sprintf(`{"pattern":%q}`, tc.pattern)); res.Err != nil || res.Content != tc.want {
			t.Errorf("search_files %q = %s, %v; want %s", tc.pattern, res.Content, res.Err, tc.want)
		}
	}
}

// Errors name paths as the model gave them: some of os.Root's name the file
// by its absolute path on the host, which the model has no business
// knowing (Agno hides the base directory unless told to expose it).
func TestFiles_ErrorsDoNotNameTheRootOnTheHost(t *testing.T) {
	t.Parallel()
	set, root, _ := setup(t, Config{})
	for _, c := range []struct{ tool, args string }{
		{"list_files", `{"directory":"readme.md"}`},
		{"save_file", `{"file_name":"readme.md/x.txt","contents":"x"}`},
		{"read_file", `{"file_name":"readme.md/x.txt"}`},
		{"read_file_chunk", `{"file_name":"readme.md/x","start_line":1,"end_line":2}`},
		{"search_content", `{"query":"x","directory":"readme.md/x"}`},
	} {
		res := run(set, c.tool, c.args)
		if res.Err == nil {
			t.Errorf("%s %s succeeded: %s", c.tool, c.args, res.Content)
		}
		if strings.Contains(res.Content, root) {
			t.Errorf("%s %s names the root: %s", c.tool, c.args, res.Content)
		}
	}
}

// A text file in another encoding came back as invalid UTF-8, which the
// result store refuses as not text (offload.ErrNotText) once it is long.
func TestFiles_NonUTF8TextComesBackAsValidUTF8(t *testing.T) {
	t.Parallel()
	set, root, _ := setup(t, Config{})
	if err := os.WriteFile(filepath.Join(root, "latin1.txt"), []byte("caf\xe9\ncr\xe8me br\xfbl\xe9e\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args, want string }{
		{"read_file", `{"file_name":"latin1.txt"}`, "caf\uFFFD\ncr\uFFFDme br\uFFFDl\uFFFDe\n"},
		{"read_file_chunk", `{"file_name":"latin1.txt","start_line":2,"end_line":2}`, "cr\uFFFDme br\uFFFDl\uFFFDe\n"},
	} {
		if res := run(set, c.tool, c.args); res.Err != nil || res.Content != c.want {
			t.Errorf("%s = %q, %v; want %q", c.tool, res.Content, res.Err, c.want)
		}
	}
}

// search_content in a directory that is missing, is a file or leads out of
// the root answered [] (no match), as if it had been searched.
func TestSearchContent_DirectoryMustExist(t *testing.T) {
	t.Parallel()
	set, _, _ := setup(t, Config{})
	for _, c := range []struct{ dir, want string }{
		{"nope", "does not exist"},
		{"readme.md", "not a directory"},
		{"leakdir", "out of the root"},
	} {
		res := run(set, "search_content", fmt.Sprintf(`{"query":"secret","directory":%q}`, c.dir))
		if res.Err == nil || !strings.Contains(res.Content, c.want) {
			t.Errorf("search_content in %q = %s, %v; want an error containing %q", c.dir, res.Content, res.Err, c.want)
		}
	}
}

// A NUL byte past the first 8000 bytes went out in the result, which the
// result store then refuses as not text: the model got a tool error naming
// the store instead of the file.
func TestFiles_NULAnywhereMeansBinary(t *testing.T) {
	t.Parallel()
	set, root, _ := setup(t, Config{})
	body := strings.Repeat("text line\n", 2000) + "tail\x00end\n"
	if err := os.WriteFile(filepath.Join(root, "late-nul.log"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"file_name":"late-nul.log"}`},
		{"read_file_chunk", `{"file_name":"late-nul.log","start_line":2000,"end_line":2001}`},
	} {
		res := run(set, c.tool, c.args)
		if res.Err == nil || !strings.Contains(res.Content, "binary") || strings.ContainsRune(res.Content, 0) {
			t.Errorf("%s = %.60q, %v; want refused as binary", c.tool, res.Content, res.Err)
		}
	}
}

// The searches read up to 20,000 files and have no timeout of their own:
// when the call's context ends (the run is cancelled) they stop, instead of
// reading on for nobody.
func TestSearch_StopsWhenTheCallEnds(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := New(Config{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out, err := k.searchContent(ctx, grepIn{Query: "needle"}); !errors.Is(err, context.Canceled) {
		t.Errorf("search_content after the call ended = %s, %v; want context.Canceled", out, err)
	}
	if out, err := k.searchFiles(ctx, globIn{Pattern: "*.txt"}); !errors.Is(err, context.Canceled) {
		t.Errorf("search_files after the call ended = %s, %v; want context.Canceled", out, err)
	}
}

// Agno's FileTools hide version control, environments, .env files, caches
// and build output from list_files and the searches by default. Without
// that, search_content returned .env secrets, and a search spent its 20,000
// entries in node_modules before reaching the project's files.
func TestFiles_DefaultExcludesHideNoiseAndSecrets(t *testing.T) {
	t.Parallel()
	layout := map[string]string{
		".env":                           "API_KEY=sk-secret\n",
		"config/prod.env":                "API_KEY=sk-secret\n",
		".git/config":                    "[core]\n",
		"node_modules/pkg/readme.md":     "# pkg\n",
		"src/app/notes.md":               "API_KEY is read from the environment\n",
		"build/out.md":                   "# generated\n",
		"src/__pycache__/mod.cpython.md": "x\n",
	}
	for _, excludes := range [][]string{nil, {}} {
		set, root, _ := setup(t, Config{ExcludePatterns: excludes})
		for p, body := range layout {
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		list := run(set, "list_files", `{}`).Content
		found := run(set, "search_files", `{"pattern":"**/*.md"}`).Content
		grep := run(set, "search_content", `{"query":"api_key"}`).Content
		if excludes == nil {
			for _, hidden := range []string{".env", ".git", "node_modules", "build/"} {
				if strings.Contains(list, hidden) {
					t.Errorf("list_files shows %s: %s", hidden, list)
				}
			}
			if found != `["docs/guide.md","readme.md","src/app/notes.md"]` {
				t.Errorf("search_files = %s", found)
			}
			if strings.Contains(grep, "sk-secret") || !strings.Contains(grep, "src/app/notes.md") {
				t.Errorf("search_content = %s", grep)
			}
			// Named, a hidden file is still read (as in Agno).
			if res := run(set, "read_file", `{"file_name":".env"}`); res.Err != nil {
				t.Errorf("read_file .env: %v", res.Err)
			}
			continue
		}
		// exclude_patterns: [] hides nothing.
		if !strings.Contains(list, ".env") || !strings.Contains(found, "node_modules/pkg/readme.md") || !strings.Contains(grep, "sk-secret") {
			t.Errorf("with no excludes: list %s\nfound %s\ngrep %s", list, found, grep)
		}
	}
	for _, bad := range []string{"src/*.go", "[z-a", ""} {
		if _, err := New(Config{Root: t.TempDir(), ExcludePatterns: []string{bad}}); err == nil {
			t.Errorf("exclude pattern %q accepted", bad)
		}
	}
}

// The largest read cap is a cap like any other: one byte more than it
// overflowed (MaxReadBytes+1, and 64 times it for read_file_chunk) into a
// negative limit, and every file read back empty, reported as a success.
func TestFiles_LargestReadCap(t *testing.T) {
	t.Parallel()
	for _, max := range []int64{math.MaxInt64, math.MaxInt64 / 2, math.MaxInt64/64 + 1} {
		set, _, _ := setup(t, Config{MaxReadBytes: max})
		if res := run(set, "read_file", `{"file_name":"readme.md"}`); res.Err != nil || res.Content != "# Project\nAgentry reads files.\nThe end.\n" {
			t.Errorf("max_read_bytes %d: read_file gave %q, %v", max, res.Content, res.Err)
		}
		if res := run(set, "read_file_chunk", `{"file_name":"readme.md","start_line":2,"end_line":2}`); res.Err != nil || res.Content != "Agentry reads files.\n" {
			t.Errorf("max_read_bytes %d: read_file_chunk gave %q, %v", max, res.Content, res.Err)
		}
		if res := run(set, "search_content", `{"query":"mentions"}`); res.Err != nil || !strings.Contains(res.Content, "guide.md") {
			t.Errorf("max_read_bytes %d: search_content gave %q, %v", max, res.Content, res.Err)
		}
	}
}

// A read cut at max_read_bytes inside a UTF-8 character drops that
// character instead of ending in U+FFFD.
func TestFiles_CutReadEndsOnACharacter(t *testing.T) {
	t.Parallel()
	for max, want := range map[int64]string{4: "abc", 5: "abcé", 6: "abcé", 7: "abcé"} {
		set, root, _ := setup(t, Config{MaxReadBytes: max})
		if err := os.WriteFile(filepath.Join(root, "word.txt"), []byte("abcé€ and more"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := run(set, "read_file", `{"file_name":"word.txt"}`)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if got, _, _ := strings.Cut(res.Content, "\n[truncated"); got != want {
			t.Errorf("cut at %d bytes: %q, want %q", max, got, want)
		}
	}
}

// read_file_chunk reads a file's first 64 read caps: lines past them came
// back as "" (and the line the limit cut, as if whole), a success that
// told the model the file ended there. It now says where it stopped; and a
// line over the line cap fails the call only when it is asked for.
func TestReadFileChunk_SaysWhereItStopped(t *testing.T) {
	t.Parallel()
	// max_read_bytes 1: chunks come from the first 64 bytes of big.txt,
	// five lines of "0123456789\n" and 9 bytes of the sixth.
	set, _, _ := setup(t, Config{MaxReadBytes: 1})
	res := run(set, "read_file_chunk", `{"file_name":"big.txt","start_line":10,"end_line":12}`)
	if res.Err == nil || !strings.Contains(res.Content, "64 bytes") {
		t.Errorf("lines past the limit: %q, %v; want an error naming the limit", res.Content, res.Err)
	}
	res = run(set, "read_file_chunk", `{"file_name":"big.txt","start_line":4,"end_line":8}`)
	if res.Err != nil || res.Content != "0123456789\n0123456789\n[read_file_chunk reads the first 64 bytes of a file: line 6 on are past them]" {
		t.Errorf("lines across the limit: %q, %v", res.Content, res.Err)
	}
	if res := run(set, "read_file_chunk", `{"file_name":"big.txt","start_line":5,"end_line":5}`); res.Err != nil || res.Content != "0123456789\n" {
		t.Errorf("a line within the limit: %q, %v", res.Content, res.Err)
	}
	// The file's own end is no limit.
	if res := run(set, "read_file_chunk", `{"file_name":"readme.md","start_line":3,"end_line":9}`); res.Err != nil || res.Content != "The end.\n" {
		t.Errorf("lines past the end of a short file: %q, %v", res.Content, res.Err)
	}
	// A line of 2 MiB before the chunk is skipped, not a failure.
	set, root, _ := setup(t, Config{})
	long := strings.Repeat("x", 2<<20)
	if err := os.WriteFile(filepath.Join(root, "long.txt"), []byte("first\n"+long+"\nthird\nfourth"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := run(set, "read_file_chunk", `{"file_name":"long.txt","start_line":3,"end_line":4}`); res.Err != nil || res.Content != "third\nfourth\n" {
		t.Errorf("lines after a long one: %.100q, %v", res.Content, res.Err)
	}
	if res := run(set, "read_file_chunk", `{"file_name":"long.txt","start_line":2,"end_line":2}`); res.Err == nil || !strings.Contains(res.Content, "line 2") {
		t.Errorf("the long line itself: %.100q, %v; want an error naming it", res.Content, res.Err)
	}
}

// A search that stops before it has looked everywhere says so: one that
// gave up after its walk's cap of entries, or whose matches filled the
// entries or output cap, returned what it had found as if that were all
// (an empty list read as "nothing matches" in a tree it had not finished).
func TestSearch_SaysWhenItStoppedEarly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 30 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%02d.txt", i)), []byte("needle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	search := func(cfg Config, walkCap int, tool string, args any) []json.RawMessage {
		t.Helper()
		cfg.Root = root
		k, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		if walkCap > 0 {
			k.maxWalk = walkCap
		}
		var out json.RawMessage
		switch a := args.(type) {
		case globIn:
			out, err = k.searchFiles(context.Background(), a)
		case grepIn:
			out, err = k.searchContent(context.Background(), a)
		}
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(out, &items); err != nil {
			t.Fatal(err)
		}
		return items
	}
	last := func(items []json.RawMessage) string {
		if len(items) == 0 {
			return ""
		}
		return string(items[len(items)-1])
	}
	// The walk's cap, before anything matched the whole tree.
	if got := search(Config{}, 10, "search_files", globIn{Pattern: "f2*.txt"}); !strings.Contains(last(got), "stopped after 10 entries") {
		t.Errorf("search_files past the walk's cap: %s", got)
	}
	if got := search(Config{}, 10, "search_content", grepIn{Query: "needle", Limit: 100}); len(got) != 10 || !strings.Contains(last(got), "stopped after 10 entries") {
		t.Errorf("search_content past the walk's cap: %d items, last %s", len(got), last(got))
	}
	// search_files filled max_entries with more to come; one that found
	// exactly max_entries has nothing to say.
	if got := search(Config{MaxEntries: 5}, 0, "search_files", globIn{Pattern: "*.txt"}); len(got) != 6 || !strings.Contains(last(got), "more files match") {
		t.Errorf("search_files over max_entries: %d items, last %s", len(got), last(got))
	}
	if got := search(Config{MaxEntries: 30}, 0, "search_files", globIn{Pattern: "*.txt"}); len(got) != 30 || strings.Contains(last(got), "[") {
		t.Errorf("search_files with exactly max_entries matches: %d items, last %s", len(got), last(got))
	}
	// search_content filled max_output.
	if got := search(Config{MaxOutput: 200}, 0, "search_content", grepIn{Query: "needle", Limit: 30}); len(got) > 6 || !strings.Contains(last(got), "more matches") {
		t.Errorf("search_content over max_output: %d items, last %s", len(got), last(got))
	}
	// A search that looked everywhere adds nothing.
	if got := search(Config{}, 0, "search_content", grepIn{Query: "needle", Limit: 30}); len(got) != 30 || strings.Contains(last(got), "[") {
		t.Errorf("a complete search_content: %d items, last %s", len(got), last(got))
	}
}

// A glob's cost is its length times each path's, for every file of the
// walk: a pattern of 300 KB of "**/" took 2.5 ms a file, a minute over
// 20,000 files, in a tool without a timeout. Patterns are capped.
func TestSearchFiles_RefusesAHugePattern(t *testing.T) {
	t.Parallel()
	set, _, _ := setup(t, Config{})
	huge := strings.Repeat("**/", 1000) + "*.md"
	res := run(set, "search_files", `{"pattern":"`+huge+`"}`)
	if res.Err == nil || !strings.Contains(res.Content, "at most 1024") {
		t.Errorf("a %d-byte pattern: %.100q, %v; want an error naming the cap", len(huge), res.Content, res.Err)
	}
	if res := run(set, "search_files", `{"pattern":"`+strings.Repeat("**/", 300)+`*.md"}`); res.Err != nil || !strings.Contains(res.Content, "guide.md") {
		t.Errorf("a pattern under the cap: %.100q, %v", res.Content, res.Err)
	}
}

// max_output caps the text of every call, list_files' and search_files'
// too: they returned up to max_entries paths whatever their length (500
// deep paths are well over the default 64 KiB).
func TestListAndSearchFiles_KeepToMaxOutput(t *testing.T) {
	t.Parallel()
	set, root, _ := setup(t, Config{MaxOutput: 300})
	deep := filepath.Join(root, strings.Repeat("deep-directory-name/", 5))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if err := os.WriteFile(filepath.Join(deep, fmt.Sprintf("file-with-a-long-name-%02d.txt", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := strings.Repeat("deep-directory-name/", 5)
	for _, c := range []struct{ tool, args string }{
		{"list_files", `{"directory":"` + dir + `"}`},
		{"search_files", `{"pattern":"file-with-*.txt"}`},
	} {
		res := run(set, c.tool, c.args)
		var items []string
		if err := json.Unmarshal([]byte(res.Content), &items); res.Err != nil || err != nil {
			t.Fatalf("%s: %q, %v", c.tool, res.Content, res.Err)
		}
		if len(res.Content) > 300+200 || len(items) < 2 || !strings.HasPrefix(items[len(items)-1], "[") {
			t.Errorf("%s with max_output 300: %d bytes, %d items, last %q", c.tool, len(res.Content), len(items), items[len(items)-1])
		}
	}
}
