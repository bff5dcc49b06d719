package files

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/tool"
)

// ErrOutsideRoot marks a path that names something outside the root.
var ErrOutsideRoot = errors.New("files: path outside the root directory")

// Defaults of Config's zero values.
const (
	DefaultMaxReadBytes  = 1 << 20
	DefaultMaxOutput     = 64 << 10
	DefaultMaxWriteBytes = 1 << 20
	DefaultMaxEntries    = 500
	maxWalk              = 20_000 // entries one search visits
	maxPatternBytes      = 1 << 10
)

// Config configures the files toolkit.
type Config struct {
	// Root is the directory the tools see as "."; it must exist.
	Root string
	// MaxReadBytes caps what one read or search loads from a file.
	MaxReadBytes int64
	// MaxOutput caps the text one call returns, in bytes.
	MaxOutput int
	// MaxWriteBytes caps what save_file writes.
	MaxWriteBytes int
	// MaxEntries caps the entries list_files and the searches return.
	MaxEntries int
	// ExcludePatterns are globs (path.Match, no "/") that hide a file or
	// directory from list_files, search_files and search_content when any
	// component of its path matches, as Agno's exclude_patterns: nil means
	// DefaultExcludePatterns, an empty list hides nothing. read_file and
	// save_file still reach such paths when named.
	ExcludePatterns []string
}

// DefaultExcludePatterns are Agno FileTools' defaults: version control,
// environments and secrets (.env files), caches and build output. Without
// them a search spends its entries in node_modules or .git and returns
// .env secrets to the model.
var DefaultExcludePatterns = []string{
	".context", ".conductor", ".claude", ".codex", ".cursor",
	".venv", ".venvs", "venv", ".env*", "*.env",
	".git", ".hg", ".svn",
	"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox", ".nox", ".ipynb_checkpoints", "dist", "build", "*.egg-info",
	"node_modules", ".next", ".turbo", ".nuxt", ".svelte-kit", ".docusaurus", ".parcel-cache", ".nyc_output", "*.tsbuildinfo", ".serverless",
	".gradle", ".kotlin", "*.class",
	".dart_tool", ".flutter-plugins", ".flutter-plugins-dependencies",
	".build", "xcuserdata", "*.xcuserstate",
	".bundle", "*.gem", ".yardoc",
	"_build", ".elixir_ls",
	".vs",
	".terraform", "*.tfstate", "*.tfstate.*", ".terragrunt-cache",
	".DS_Store",
}

// Toolkit is the files toolkit bound to an open root directory.
type Toolkit struct {
	cfg     Config
	root    *os.Root
	maxWalk int // entries one search visits (tests lower it)
}

// New opens cfg.Root. Close releases it.
func New(cfg Config) (*Toolkit, error) {
	if cfg.Root == "" {
		return nil, errors.New("files: root is required (the directory the agent may use)")
	}
	root, err := os.OpenRoot(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("files: root %q: %w", cfg.Root, err)
	}
	if cfg.MaxReadBytes <= 0 {
		cfg.MaxReadBytes = DefaultMaxReadBytes
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if cfg.MaxWriteBytes <= 0 {
		cfg.MaxWriteBytes = DefaultMaxWriteBytes
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.ExcludePatterns == nil {
		cfg.ExcludePatterns = DefaultExcludePatterns
	}
	for _, pat := range cfg.ExcludePatterns {
		if _, err := path.Match(pat, ""); err != nil || pat == "" || strings.Contains(pat, "/") {
			root.Close()
			return nil, fmt.Errorf("files: exclude_patterns entry %q: write a glob for one path component, such as node_modules or *.log", pat)
		}
	}
	return &Toolkit{cfg: cfg, root: root, maxWalk: maxWalk}, nil
}

// Close closes the root directory.
func (k *Toolkit) Close() error { return k.root.Close() }

type saveIn struct {
	Contents  string `json:"contents" jsonschema:"the text to write"`
	FileName  string `json:"file_name" jsonschema:"path relative to the root, e.g. reports/summary.txt"`
	Overwrite *bool  `json:"overwrite,omitempty" jsonschema:"replace an existing file; default true"`
}

type readIn struct {
	FileName string `json:"file_name" jsonschema:"path relative to the root"`
}

type chunkIn struct {
	FileName  string `json:"file_name" jsonschema:"path relative to the root"`
	StartLine int    `json:"start_line" jsonschema:"first line to return, from 1"`
	EndLine   int    `json:"end_line" jsonschema:"last line to return (inclusive)"`
}

type listIn struct {
	Directory string `json:"directory,omitempty" jsonschema:"directory relative to the root; default ."`
}

type globIn struct {
	Pattern string `json:"pattern" jsonschema:"a glob such as *.md (matched against file names anywhere), docs/*.md or src/**/*.go (against paths; ** spans directories)"`
}

type grepIn struct {
	Query     string `json:"query" jsonschema:"text to find (case-insensitive)"`
	Directory string `json:"directory,omitempty" jsonschema:"directory to search; default ."`
	Limit     int    `json:"limit,omitempty" jsonschema:"maximum matches; default 10"`
}

// Toolkit returns the tools as a tool.Toolkit named "file_tools".
func (k *Toolkit) Toolkit() (tool.Toolkit, error) {
	var tools []tool.Tool
	add := func(t tool.Tool, err error) error {
		if err == nil {
			tools = append(tools, t)
		}
		return err
	}
	err := errors.Join(
		add(tool.Func(tool.FuncConfig{Name: "save_file", Description: "Writes text to a file under the root directory, creating parent directories."}, k.save)),
		add(tool.Func(tool.FuncConfig{Name: "read_file", Description: "Reads a text file under the root directory."}, k.read)),
		add(tool.Func(tool.FuncConfig{Name: "read_file_chunk", Description: "Reads lines start_line to end_line (1-based, inclusive) of a text file."}, k.readChunk)),
		add(tool.Func(tool.FuncConfig{Name: "list_files", Description: "Lists a directory under the root as a JSON array; directories end with /."}, k.list)),
		add(tool.Func(tool.FuncConfig{Name: "search_files", Description: "Finds files whose name (or path, when the pattern has a /) matches a glob; returns a JSON array of paths (a last entry in [brackets] says why the search stopped early)."}, k.searchFiles)),
		add(tool.Func(tool.FuncConfig{Name: "search_content", Description: "Finds lines containing a text in files under a directory; returns JSON matches with file, line and text (a last match without a file says why the search stopped early)."}, k.searchContent)),
	)
	if err != nil {
		return tool.Toolkit{}, err
	}
	return tool.Toolkit{Name: "file_tools", Tools: tools}, nil
}

// rel checks a model-supplied path: relative, no "..", inside the root.
// os.Root enforces the same again (and symlinks) at every open.
func rel(p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		p = "."
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: the path contains a NUL byte", ErrOutsideRoot)
	}
	p = filepath.ToSlash(p)
	if path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" {
		return "", fmt.Errorf("%w: %q is absolute; use a path relative to the root", ErrOutsideRoot, p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: %q uses ..; use a path relative to the root", ErrOutsideRoot, p)
		}
	}
	return path.Clean(p), nil
}

// wrap explains os.Root's refusals in the tool's terms. Other path errors
// name p as the model gave it: some name the file by its absolute path,
// which tells the model where the root is on the host.
func wrap(p string, err error) error {
	if err == nil {
		return nil
	}
	var pe *os.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
		return fmt.Errorf("%w: %q leads out of the root (a symlink?)", ErrOutsideRoot, p)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%q does not exist; list_files shows what does", p)
	}
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %q: %w", pe.Op, p, pe.Err)
	}
	return err
}

func (k *Toolkit) save(_ context.Context, in saveIn) (string, error) {
	p, err := rel(in.FileName)
	if err != nil {
		return "", err
	}
	if p == "." {
		return "", errors.New("file_name is required")
	}
	if len(in.Contents) > k.cfg.MaxWriteBytes {
		return "", fmt.Errorf("contents are %d bytes; save_file writes at most %d", len(in.Contents), k.cfg.MaxWriteBytes)
	}
	if dir := path.Dir(p); dir != "." {
		if err := k.root.MkdirAll(dir, 0o755); err != nil {
			return "", wrap(p, err)
		}
	}
	// Only a regular file is written over (a named pipe's open would block
	// until a reader comes).
	if st, err := k.root.Stat(p); err == nil && !st.Mode().IsRegular() {
		return "", notRegular(p)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if in.Overwrite != nil && !*in.Overwrite {
		flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	}
	if afterStat != nil {
		afterStat(p)
	}
	f, err := k.root.OpenFile(p, flags|nonblock, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("%q exists; pass overwrite true to replace it", p)
	}
	if errors.Is(err, syscall.ENXIO) {
		return "", notRegular(p) // a named pipe no one reads, put there since the Stat
	}
	if err != nil {
		return "", wrap(p, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() { // replaced since the Stat
		f.Close()
		return "", cmp.Or(wrap(p, err), notRegular(p))
	}
	if _, err := io.WriteString(f, in.Contents); err != nil {
		f.Close()
		return "", wrap(p, err)
	}
	if err := f.Close(); err != nil {
		return "", wrap(p, err)
	}
	return fmt.Sprintf("saved %s (%d bytes)", p, len(in.Contents)), nil
}

// openRegular opens p for reading when it is a regular file (or a link to
// one inside the root). Anything else is refused before it is opened: a
// named pipe's open blocks until a writer comes, and its read until one
// writes, in a goroutine no timeout ends.
func (k *Toolkit) openRegular(p string) (*os.File, error) {
	st, err := k.root.Stat(p)
	if err != nil {
		return nil, wrap(p, err)
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(p)
	}
	if afterStat != nil {
		afterStat(p)
	}
	f, err := k.root.OpenFile(p, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, wrap(p, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() { // replaced in between (nonblock: the open did not wait)
		f.Close()
		return nil, cmp.Or(wrap(p, err), notRegular(p))
	}
	return f, nil
}

// afterStat, set by tests only, runs between openRegular's Stat and its
// open (to replace the file in that window).
var afterStat func(p string)

// excluded reports whether a component of p (relative to the root) matches
// an exclude pattern.
func (k *Toolkit) excluded(p string) bool {
	for _, part := range strings.Split(p, "/") {
		for _, pat := range k.cfg.ExcludePatterns {
			if ok, _ := path.Match(pat, part); ok {
				return true
			}
		}
	}
	return false
}

func notRegular(p string) error { return fmt.Errorf("%q is not a regular file", p) }

// load reads at most MaxReadBytes of a regular text file.
func (k *Toolkit) load(p string) ([]byte, bool, error) {
	f, err := k.openRegular(p)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	limit := k.cfg.MaxReadBytes // one byte more tells a cut file
	if limit < math.MaxInt64 {
		limit++
	}
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, false, wrap(p, err)
	}
	cut := int64(len(b)) > k.cfg.MaxReadBytes
	if cut {
		// Not inside a UTF-8 character: its first bytes would read as
		// U+FFFD.
		b = clip.DropPartial(b[:k.cfg.MaxReadBytes])
	}
	// A NUL anywhere, not only near the start: the result store refuses
	// results holding one, as not text (offload.ErrNotText).
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, false, fmt.Errorf("%q is a binary file; the files tools read text", p)
	}
	return b, cut, nil
}

func (k *Toolkit) read(_ context.Context, in readIn) (string, error) {
	p, err := rel(in.FileName)
	if err != nil {
		return "", err
	}
	b, cut, err := k.load(p)
	if err != nil {
		return "", err
	}
	// Text in another encoding (Latin-1, a cut multi-byte character) must
	// not reach the model, or the result store, as invalid UTF-8.
	out, cut2 := tool.Truncate(strings.ToValidUTF8(string(b), "\uFFFD"), k.cfg.MaxOutput)
	if cut || cut2 {
		out += fmt.Sprintf("\n[truncated at %d bytes: read the rest with read_file_chunk]", len(out))
	}
	return out, nil
}

func (k *Toolkit) readChunk(_ context.Context, in chunkIn) (string, error) {
	p, err := rel(in.FileName)
	if err != nil {
		return "", err
	}
	if in.StartLine < 1 || in.EndLine < in.StartLine {
		return "", fmt.Errorf("lines %d to %d: start_line counts from 1 and end_line is at least start_line", in.StartLine, in.EndLine)
	}
	f, err := k.openRegular(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// A chunk is read from the first 64 read caps of the file (a cap
	// over a 64th of the largest size means no limit, rather than one
	// overflowing into a negative limit that read nothing).
	chunkLimit := int64(math.MaxInt64)
	if k.cfg.MaxReadBytes <= math.MaxInt64/64 {
		chunkLimit = 64 * k.cfg.MaxReadBytes
	}
	lr := &io.LimitedReader{R: f, N: chunkLimit}
	br := bufio.NewReaderSize(lr, maxLineBytes)
	var b strings.Builder
	for n := 1; n <= in.EndLine; n++ {
		keep := n >= in.StartLine
		raw, seen, whole, err := nextLine(br, keep)
		if errors.Is(err, bufio.ErrBufferFull) {
			return "", fmt.Errorf("line %d of %q is over %d bytes; read_file reads it in part", n, p, maxLineBytes)
		}
		if err != nil {
			return "", fmt.Errorf("reading %q: %w", p, wrap(p, err))
		}
		if !whole && lr.N == 0 && moreToRead(f) {
			// The limit, not the file, ended here: line n (begun in
			// raw) and those after it are not read.
			if b.Len() == 0 {
				return "", fmt.Errorf("line %d of %q is past the first %d bytes of the file, which is as far as read_file_chunk reads", in.StartLine, p, chunkLimit)
			}
			fmt.Fprintf(&b, "[read_file_chunk reads the first %d bytes of a file: line %d on are past them]", chunkLimit, n)
			return b.String(), nil
		}
		if !seen {
			break // the end of the file
		}
		if !keep {
			continue
		}
		if bytes.IndexByte(raw, 0) >= 0 {
			return "", fmt.Errorf("%q is a binary file (line %d holds a NUL byte); the files tools read text", p, n)
		}
		line := strings.ToValidUTF8(string(bytes.TrimSuffix(raw, []byte("\r"))), "\uFFFD")
		if b.Len()+len(line) > k.cfg.MaxOutput {
			fmt.Fprintf(&b, "[truncated before line %d: ask for fewer lines]", n)
			return b.String(), nil
		}
		b.WriteString(line)
		b.WriteByte('\n')
		if !whole {
			break // a last line without a line break
		}
	}
	return b.String(), nil
}

// maxLineBytes is the longest line read_file_chunk returns.
const maxLineBytes = 1 << 20

// nextLine reads one line from br: its text without the line break when
// keep (else nothing, however long it is), whether there was a line
// (seen) and whether it ended in a line break (whole). A line kept that is
// longer than br's buffer is bufio.ErrBufferFull.
func nextLine(br *bufio.Reader, keep bool) (line []byte, seen, whole bool, err error) {
	for {
		s, err := br.ReadSlice('\n')
		seen = seen || len(s) > 0
		switch {
		case err == nil:
			if keep {
				line = append(line, s[:len(s)-1]...)
			}
			return line, true, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if keep {
				return nil, true, false, err
			}
		case errors.Is(err, io.EOF):
			if keep {
				line = append(line, s...)
			}
			return line, seen, false, nil
		default:
			return nil, seen, false, err
		}
	}
}

// moreToRead reports whether f has bytes left to read.
func moreToRead(f *os.File) bool {
	var one [1]byte
	n, _ := f.Read(one[:])
	return n > 0
}

func (k *Toolkit) list(_ context.Context, in listIn) (json.RawMessage, error) {
	p, err := rel(in.Directory)
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(k.root.FS(), p)
	if err != nil {
		return nil, wrap(p, err)
	}
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return k.excluded(path.Join(p, e.Name())) })
	out := []string{}
	size := 0
	for i, e := range entries {
		name := path.Join(p, e.Name())
		if e.IsDir() {
			name += "/"
		}
		if len(out) == k.cfg.MaxEntries || size+jsonItemBytes(name) > k.cfg.MaxOutput {
			out = append(out, fmt.Sprintf("[%d more entries not shown]", len(entries)-i))
			break
		}
		size += jsonItemBytes(name)
		out = append(out, name)
	}
	return json.Marshal(out)
}

// jsonItemBytes is about what s adds to a JSON list of strings.
func jsonItemBytes(s string) int { return len(s) + 3 }

// walk visits regular files under dir (not following symlinks), at most
// k.maxWalk entries; fn returns false to stop. It reports whether it
// stopped at that cap, with entries left unvisited.
func (k *Toolkit) walk(ctx context.Context, dir string, fn func(p string) bool) (capped bool, err error) {
	seen := 0
	err = fs.WalkDir(k.root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		// A search reads up to maxWalk files: it stops when the call ends
		// (the run is cancelled) instead of reading on for nobody.
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if err != nil {
			return nil // unreadable entries are skipped
		}
		if p != dir && k.excluded(p) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if seen++; seen > k.maxWalk {
			capped = true
			return fs.SkipAll
		}
		if d.Type().IsRegular() && !fn(p) {
			return fs.SkipAll
		}
		return nil
	})
	return capped, wrap(dir, err)
}

// walkCapped is the note ending a search whose walk stopped at its cap.
func (k *Toolkit) walkCapped() string {
	return fmt.Sprintf("[the search stopped after %d entries, before it had looked everywhere: search a subdirectory or a narrower pattern]", k.maxWalk)
}

func (k *Toolkit) searchFiles(ctx context.Context, in globIn) (json.RawMessage, error) {
	pattern := strings.TrimSpace(filepath.ToSlash(in.Pattern))
	if len(pattern) > maxPatternBytes {
		// Matching costs the pattern's length for every file walked.
		return nil, fmt.Errorf("pattern is %d bytes; at most %d", len(pattern), maxPatternBytes)
	}
	if _, err := path.Match(pattern, ""); err != nil || pattern == "" {
		return nil, fmt.Errorf("pattern %q is not a glob (use *, ? and [...])", in.Pattern)
	}
	pattern, err := rel(pattern) // walked paths are clean: "./docs/*.md" is "docs/*.md"
	if err != nil {
		return nil, err
	}
	byPath := strings.Contains(pattern, "/")
	segments := strings.Split(pattern, "/")
	out := []string{}
	size, more := 0, false
	capped, err := k.walk(ctx, ".", func(p string) bool {
		var ok bool
		if byPath {
			ok = matchSegments(segments, strings.Split(p, "/"))
		} else {
			ok, _ = path.Match(pattern, path.Base(p))
		}
		if !ok {
			return true
		}
		if len(out) == k.cfg.MaxEntries || size+jsonItemBytes(p) > k.cfg.MaxOutput {
			more = true
			return false
		}
		size += jsonItemBytes(p)
		out = append(out, p)
		return true
	})
	if err != nil {
		return nil, err
	}
	switch {
	case more:
		out = append(out, fmt.Sprintf("[more files match: only the first %d are shown; use a narrower pattern]", len(out)))
	case capped:
		out = append(out, k.walkCapped())
	}
	return json.Marshal(out)
}

// matchSegments matches a path against a glob split at "/", where a "**"
// segment stands for any number of directories, none included (as in
// Agno's pathlib globs: "**/*.py" finds every Python file). It fills a
// table from the ends (next[j]: the rest of the pattern matches p[j:]), so
// a pattern of many "**" costs its length times the path's, not more.
func matchSegments(pattern, p []string) bool {
	next := make([]bool, len(p)+1)
	cur := make([]bool, len(p)+1)
	next[len(p)] = true
	for i := len(pattern) - 1; i >= 0; i-- {
		cur[len(p)] = pattern[i] == "**" && next[len(p)]
		for j := len(p) - 1; j >= 0; j-- {
			if pattern[i] == "**" {
				cur[j] = next[j] || cur[j+1]
				continue
			}
			ok, _ := path.Match(pattern[i], p[j])
			cur[j] = ok && next[j+1]
		}
		next, cur = cur, next
	}
	return next[0]
}

type match struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

func (k *Toolkit) searchContent(ctx context.Context, in grepIn) (json.RawMessage, error) {
	q := strings.ToLower(in.Query)
	if strings.TrimSpace(q) == "" {
		return nil, errors.New("query is empty: say what text to find")
	}
	dir, err := rel(in.Directory)
	if err != nil {
		return nil, err
	}
	// The walk skips what it cannot read; a directory that is missing, is
	// a file or leads out of the root must not pass for one with no match.
	if st, err := k.root.Stat(dir); err != nil {
		return nil, wrap(dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%q is not a directory", dir)
	}
	limit := in.Limit
	if limit == 0 {
		limit = 10
	}
	if limit < 0 {
		return nil, fmt.Errorf("limit %d: use a positive number", limit)
	}
	limit = min(limit, k.cfg.MaxEntries)
	out := []match{}
	size, full := 0, false
	capped, err := k.walk(ctx, dir, func(p string) bool {
		b, _, err := k.load(p)
		if err != nil {
			return true // binary or unreadable: not searched
		}
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(strings.ToLower(line), q) {
				continue
			}
			text, _ := tool.Truncate(strings.TrimSpace(line), 300)
			size += len(p) + len(text) + 30
			if len(out) == limit {
				return false
			}
			if size > k.cfg.MaxOutput {
				full = true
				return false
			}
			out = append(out, match{File: p, Line: i + 1, Text: text})
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	// A note ends a search that stopped before its limit with more to
	// find, in a match of no file.
	switch {
	case full:
		out = append(out, match{Text: fmt.Sprintf("[more matches not shown: they would pass %d bytes; ask for a smaller limit or search a subdirectory]", k.cfg.MaxOutput)})
	case capped:
		out = append(out, match{Text: k.walkCapped()})
	}
	return json.Marshal(out)
}
