package knowledge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	htmlcharset "golang.org/x/net/html/charset"
	xunicode "golang.org/x/text/encoding/unicode"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/knowledge/chunk"
	"github.com/agentryhq/agentry/knowledge/reader"
	"github.com/agentryhq/agentry/vectordb"
)

// Content is one document to insert: exactly one of Text, Path, URL or
// Data. Name defaults to the file name or the URL (cut to 255 characters)
// or the text's start.
type Content struct {
	Name        string
	Description string
	Metadata    map[string]any
	Text        string
	Path        string
	URL         string
	Data        []byte
	// Filename and ContentType describe Data (an upload) for the reader.
	Filename    string
	ContentType string
	// Reader forces a reader (reader.Text, reader.Markdown, …); empty detects.
	Reader string
	// Chunker overrides the knowledge base's chunker for this content.
	Chunker chunk.Chunker
	// UserID owns the content when the caller is unscoped (an admin); empty
	// is shared. A scoped caller always inserts as itself.
	UserID string
}

// Progress reports an insert's steps (for a progress bar).
type Progress struct {
	ContentID string
	Name      string
	Chunks    int // chunks of this content, once chunked
	Embedded  int // chunks embedded so far
	Done      bool
	Skipped   bool // unchanged content already indexed
	Err       error
}

// Result is what an insert did.
type Result struct {
	Content *db.KnowledgeContent
	Chunks  int
	// Skipped: the same content was already indexed; nothing changed.
	Skipped bool
}

func (c *Content) sources() int {
	n := 0
	for _, set := range []bool{c.Text != "", c.Path != "", c.URL != "", c.Data != nil} {
		if set {
			n++
		}
	}
	return n
}

// identity is what makes two inserts "the same content" (Agno's content
// hash parts: owner digest, name, description, metadata, source).
func (k *Knowledge) identity(owner string, c *Content) string {
	h := sha256.New()
	if owner != "" {
		o := sha256.Sum256([]byte(owner))
		fmt.Fprintf(h, "owner:%x\x00", o[:8])
	}
	meta, _ := json.Marshal(c.Metadata) // map keys are sorted
	fmt.Fprintf(h, "kb:%s\x00name:%s\x00desc:%s\x00meta:%s\x00", k.cfg.Name, c.Name, c.Description, meta)
	switch {
	case c.Path != "":
		abs, _ := filepath.Abs(c.Path)
		fmt.Fprintf(h, "path:%s", abs)
	case c.URL != "":
		fmt.Fprintf(h, "url:%s", c.URL)
	case c.Data != nil:
		if c.Filename != "" {
			fmt.Fprintf(h, "file:%s", c.Filename)
		} else {
			d := sha256.Sum256(c.Data)
			fmt.Fprintf(h, "bytes:%x", d[:8])
		}
	default:
		d := sha256.Sum256([]byte(c.Text))
		fmt.Fprintf(h, "str:%x", d[:8])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (k *Knowledge) owner(ctx context.Context, c *Content) string {
	if u, ok := db.UserScope(ctx); ok {
		return u
	}
	return c.UserID
}

// maxDerivedName bounds a name derived from a path, URL or file name, in
// characters: the content table's name column is VARCHAR(255) on MySQL and
// Postgres, and a long URL must not fail the insert there.
const maxDerivedName = 255

func defaultName(c *Content) string {
	// PostgreSQL's text holds no NUL (the insert failed before it had a
	// row); the content itself loses them in the reader
	return strings.ReplaceAll(derivedName(c), "\x00", "")
}

func derivedName(c *Content) string {
	// a name taken from a file or URL is made UTF-8, as the database
	// holds it: a file named in Latin-1 ("caf\xe9.txt") could not be
	// inserted at all ("has text that is not UTF-8")
	switch {
	case c.Name != "":
		return c.Name
	case c.Path != "":
		return clipName(strings.ToValidUTF8(filepath.Base(c.Path), "\uFFFD"))
	case c.URL != "":
		return clipName(strings.ToValidUTF8(c.URL, "\uFFFD"))
	case c.Filename != "":
		return clipName(strings.ToValidUTF8(c.Filename, "\uFFFD"))
	}
	t := strings.Join(strings.Fields(c.Text), " ")
	if r := []rune(t); len(r) > 60 {
		t = string(r[:60]) + "…"
	}
	if !utf8.ValidString(t) || t == "" {
		t = "text"
	}
	return t
}

// clipName cuts s to its first maxDerivedName characters, on a rune
// boundary.
func clipName(s string) string {
	n := 0
	for i := range s {
		if n == maxDerivedName {
			s, _ = clip.Bytes(s, i)
			return s
		}
		n++
	}
	return s
}

// Insert reads, chunks, embeds and indexes one content and records it in
// agno_knowledge, all before returning. Inserting the same content again is
// a no-op (Result.Skipped). On failure the row is FAILED with the reason,
// the error is returned, and no vectors of the content remain.
func (k *Knowledge) Insert(ctx context.Context, c Content) (*Result, error) {
	row, existing, err := k.begin(ctx, &c)
	if err != nil {
		return nil, err
	}
	return k.process(ctx, &c, row, existing, nil)
}

// InsertAsync records the content as PROCESSING and returns its row at
// once; the work continues in the background (bounded by 30 minutes, not by
// ctx's cancellation) and ends COMPLETED or FAILED with status_message.
// Poll Get for the status; Wait waits for all background inserts.
func (k *Knowledge) InsertAsync(ctx context.Context, c Content) (*db.KnowledgeContent, error) {
	row, existing, err := k.begin(ctx, &c)
	if err != nil {
		return nil, err
	}
	snapshot := *row // the background work changes row; the caller gets its own copy
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultAsyncTimeout)
	k.async.Add(1)
	go func() {
		defer k.async.Done()
		defer cancel()
		if _, err := k.process(bg, &c, row, existing, nil); err != nil {
			k.cfg.Logger.Info("knowledge: insert failed", "content_id", snapshot.ID, "name", snapshot.Name, "err", err)
		}
	}()
	return &snapshot, nil
}

// InsertMany inserts contents one after another, reporting progress; it
// goes on after a failure and returns every result (nil for a content that
// could not start) and the failures joined. When ctx ends it stops: the
// contents not started have nil results and no progress, and the error
// includes ctx's.
func (k *Knowledge) InsertMany(ctx context.Context, cs []Content, progress func(Progress)) ([]*Result, error) {
	out := make([]*Result, len(cs))
	var errs []error
	for i := range cs {
		if err := ctx.Err(); err != nil {
			// each would fail at once with it, reported as a failed document
			errs = append(errs, fmt.Errorf("knowledge: %d of %d contents not inserted: %w", len(cs)-i, len(cs), err))
			break
		}
		c := cs[i]
		row, existing, err := k.begin(ctx, &c)
		if err == nil {
			out[i], err = k.process(ctx, &c, row, existing, progress)
		} else if progress != nil {
			progress(Progress{Name: defaultName(&c), Done: true, Err: err})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", defaultName(&c), err))
		}
	}
	return out, errors.Join(errs...)
}

// begin validates the content and makes sure its row exists. A new row is
// PROCESSING; an existing one is returned as it is.
func (k *Knowledge) begin(ctx context.Context, c *Content) (row *db.KnowledgeContent, existing bool, err error) {
	if c.sources() != 1 {
		return nil, false, ErrNoSource
	}
	if c.Metadata != nil {
		raw, err := json.Marshal(c.Metadata)
		if err != nil {
			return nil, false, fmt.Errorf("knowledge: metadata is not JSON: %w", err)
		}
		var v any
		_ = json.Unmarshal(raw, &v) // just marshalled
		if err := checkNoNUL(v); err != nil {
			return nil, false, err
		}
	}
	c.Name = defaultName(c)
	c.Description = strings.ReplaceAll(c.Description, "\x00", "")
	owner := k.owner(ctx, c)
	id := uuid.NewSHA1(uuid.NameSpaceOID, []byte(k.identity(owner, c))).String()
	if cur, err := k.cfg.DB.GetKnowledgeContent(ctx, id); err == nil {
		if cur.UserID != owner {
			// a visible shared row with the same identity: a scoped caller
			// cannot touch it, so its insert is its own (never happens for
			// owners: the owner is part of the identity).
			return nil, false, fmt.Errorf("%w: knowledge content %s is shared; only an admin can change it", db.ErrForbidden, id)
		}
		return cur, true, nil
	} else if !errors.Is(err, db.ErrNotFound) {
		return nil, false, err
	}
	var meta json.RawMessage
	if c.Metadata != nil {
		meta, _ = json.Marshal(c.Metadata)
	}
	row = &db.KnowledgeContent{ID: id, Name: c.Name, Description: c.Description, Metadata: meta, LinkedTo: k.cfg.Name,
		Status: db.KnowledgeProcessing, UserID: owner}
	if _, err := k.cfg.DB.InsertKnowledgeContent(ctx, row); err != nil {
		return nil, false, err
	}
	got, err := k.cfg.DB.GetKnowledgeContent(ctx, id)
	if err != nil {
		return nil, false, err
	}
	return got, false, nil
}

// load returns the content's bytes, file name and content type.
func (k *Knowledge) load(ctx context.Context, c *Content) (data []byte, name, ctype string, err error) {
	switch {
	case c.Text != "":
		if int64(len(c.Text)) > k.cfg.MaxBytes {
			return nil, "", "", k.tooLarge(int64(len(c.Text)))
		}
		kind := reader.Text
		if c.Reader != "" {
			kind = c.Reader
		}
		return []byte(c.Text), "text", reader.MIME(kind), nil
	case c.Data != nil:
		if int64(len(c.Data)) > k.cfg.MaxBytes {
			return nil, "", "", k.tooLarge(int64(len(c.Data)))
		}
		return c.Data, c.Filename, c.ContentType, nil
	case c.Path != "":
		f, err := os.Open(c.Path)
		if err != nil {
			return nil, "", "", fmt.Errorf("knowledge: %w", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return nil, "", "", fmt.Errorf("knowledge: %w", err)
		}
		if !st.Mode().IsRegular() {
			return nil, "", "", fmt.Errorf("knowledge: %s is not a regular file", c.Path)
		}
		if st.Size() > k.cfg.MaxBytes {
			return nil, "", "", k.tooLarge(st.Size())
		}
		data, err := io.ReadAll(io.LimitReader(f, k.cfg.MaxBytes+1))
		if err != nil {
			return nil, "", "", fmt.Errorf("knowledge: reading %s: %w", c.Path, err)
		}
		if int64(len(data)) > k.cfg.MaxBytes {
			return nil, "", "", k.tooLarge(int64(len(data)))
		}
		return data, filepath.Base(c.Path), "", nil
	}
	return k.fetch(ctx, c.URL)
}

func (k *Knowledge) tooLarge(n int64) error {
	return fmt.Errorf("%w: %d bytes, the cap is %d (knowledge max_bytes)", ErrTooLarge, n, k.cfg.MaxBytes)
}

// fetch GETs a URL through the SSRF guard, with the time and size caps.
func (k *Knowledge) fetch(ctx context.Context, raw string) ([]byte, string, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %v", ErrFetch, err)
	}
	if err := k.guard.CheckURL(u); err != nil {
		return nil, "", "", fmt.Errorf("%w: %w", ErrFetch, err)
	}
	ctx, cancel := context.WithTimeout(ctx, k.cfg.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %v", ErrFetch, err)
	}
	req.Header.Set("User-Agent", "agentry-knowledge/1")
	resp, err := k.guard.Client(k.cfg.FetchTimeout).Do(req)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %w", ErrFetch, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, "", "", fmt.Errorf("%w: %s answered HTTP %d", ErrFetch, u.Redacted(), resp.StatusCode)
	}
	if resp.ContentLength > k.cfg.MaxBytes {
		return nil, "", "", k.tooLarge(resp.ContentLength)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, k.cfg.MaxBytes+1))
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: reading the body: %w", ErrFetch, err)
	}
	if int64(len(data)) > k.cfg.MaxBytes {
		return nil, "", "", k.tooLarge(int64(len(data)))
	}
	name := filepath.Base(resp.Request.URL.Path)
	return data, name, resp.Header.Get("Content-Type"), nil
}

// decodeCharset decodes text that is not UTF-8 from the charset its content
// type names (an old web page in ISO-8859-1, a Windows-1252 export); the
// reader refuses whatever is still not UTF-8. Bytes that are UTF-8 already
// stay as they are, whatever the label says; a UTF-16 byte order mark wins
// over the label. An HTML page whose content type
// names no charset is decoded as a browser decodes it (the HTML standard's
// sniffing: a byte order mark, a <meta> charset declaration in its first
// 1,024 bytes, else windows-1252).
func decodeCharset(data []byte, ctype string, html bool) []byte {
	if utf8.Valid(data) {
		return data
	}
	// a UTF-16 byte order mark says the encoding whatever the label says,
	// as in a browser (Notepad's "Unicode", Excel's "Unicode Text"): such
	// a file was refused as not valid UTF-8 text
	if bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) {
		// not when it decodes with replacement characters (an odd byte, a
		// lone surrogate): that is bytes after a mark, not UTF-16 text
		if out, err := xunicode.UTF16(xunicode.BigEndian, xunicode.ExpectBOM).NewDecoder().Bytes(data); err == nil && !bytes.ContainsRune(out, utf8.RuneError) {
			return out
		}
	}
	_, params, _ := mime.ParseMediaType(ctype)
	enc, _ := htmlcharset.Lookup(params["charset"])
	if enc == nil && html {
		enc, _, _ = htmlcharset.DetermineEncoding(data, ctype)
	}
	if enc == nil {
		return data
	}
	out, err := enc.NewDecoder().Bytes(data)
	if err != nil {
		return data
	}
	return out
}

// checkNoNUL refuses metadata (as decoded JSON) holding a NUL character:
// PostgreSQL's jsonb cannot store one ("unsupported Unicode escape
// sequence"), SQLite and MySQL would.
func checkNoNUL(v any) error {
	bad := func(where string) error {
		return fmt.Errorf("%w: knowledge: metadata %q holds a NUL character, which PostgreSQL cannot store; remove it", db.ErrInvalidRecord, where)
	}
	switch x := v.(type) {
	case string:
		if strings.Contains(x, "\x00") {
			return bad(strings.ReplaceAll(x, "\x00", `\u0000`))
		}
	case map[string]any:
		for k, e := range x {
			if strings.Contains(k, "\x00") {
				return bad(strings.ReplaceAll(k, "\x00", `\u0000`))
			}
			if err := checkNoNUL(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := checkNoNUL(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// record writes an insert's outcome onto the row as it is now, changed by
// set: the insert's own copy, read when it began, would write back the
// name, description and metadata an Update made meanwhile (the edit was
// lost when the insert ended). row becomes what was written.
func (k *Knowledge) record(ctx context.Context, row *db.KnowledgeContent, set func(*db.KnowledgeContent)) error {
	cur, err := k.cfg.DB.GetKnowledgeContent(ctx, row.ID)
	if err != nil {
		return err
	}
	set(cur)
	if err := k.cfg.DB.UpdateKnowledgeContent(ctx, cur); err != nil {
		return err
	}
	*row = *cur
	return nil
}

// decodeMetadata is a row's metadata as a map (nil for none).
func decodeMetadata(c *db.KnowledgeContent) (map[string]any, error) {
	var meta map[string]any
	if raw := bytes.TrimSpace(c.Metadata); len(raw) > 0 {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("%w: knowledge content %s metadata must be a JSON object: %v", db.ErrCorruptRow, c.ID, err)
		}
	}
	return meta, nil
}

// maxStatusMessage bounds a FAILED row's status message, in bytes (MySQL's
// TEXT holds 65,535).
const maxStatusMessage = 4096

// statusMessage is err's text as a status message can be stored on every
// database: UTF-8 without NUL, at most maxStatusMessage bytes. An error
// quoting what it failed on (an embeddings API's answer, a document's
// bytes) could be neither, and the FAILED row then could not be written:
// the row stayed "processing" for good.
func statusMessage(err error) string {
	msg := strings.ToValidUTF8(strings.ReplaceAll(err.Error(), "\x00", ""), "\uFFFD")
	if cut, clipped := clip.Bytes(msg, maxStatusMessage-len("…")); clipped {
		msg = cut + "…"
	}
	return msg
}

// recordTimeout bounds recording an insert's outcome after its context
// ended.
const recordTimeout = 30 * time.Second

// recordContext is ctx's values without its cancellation, for recording
// an outcome that must be recorded however the work ended.
func recordContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
}

func recordScope(ctx context.Context, owner string) context.Context {
	if owner != "" {
		return db.WithUserScope(ctx, owner)
	}
	return ctx
}

// chunkKeys are the metadata keys a chunk has of its own (its number and
// its size in runes) besides its content's metadata.
var chunkKeys = []string{"chunk", "chunk_size"}

// process does the work after begin and records the outcome on the row.
// Inserts of one content run one at a time (in this process): interleaved,
// each would delete the content's chunks before the other's upsert and
// both sets would stay.
func (k *Knowledge) process(ctx context.Context, c *Content, row *db.KnowledgeContent, existing bool, progress func(Progress)) (*Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer k.busy.lock(row.ID, cancel)()
	report := func(p Progress) {
		if progress != nil {
			p.ContentID, p.Name = row.ID, row.Name
			progress(p)
		}
	}
	fail := func(err error) (*Result, error) {
		if cause := context.Cause(ctx); errors.Is(cause, ErrContentDeleted) {
			// Delete stopped this insert and removes the row and the
			// vectors once it returns
			report(Progress{Done: true, Err: cause})
			return &Result{Content: row}, fmt.Errorf("%w: %s (%v)", ErrContentDeleted, row.ID, err)
		}
		// nothing half-indexed: drop whatever vectors the content has, and
		// say why on the row, also when ctx ended (a cancelled caller, the
		// async bound): the row must not stay PROCESSING
		rctx, rcancel := recordContext(ctx)
		defer rcancel()
		derr := k.cfg.Vectors.DeleteContent(rctx, row.ID)
		uerr := k.record(rctx, row, func(cur *db.KnowledgeContent) {
			cur.Status, cur.StatusMessage = db.KnowledgeFailed, statusMessage(err)
		})
		if errors.Is(uerr, db.ErrNotFound) {
			uerr = nil // deleted meanwhile: nothing to say it on
		}
		report(Progress{Done: true, Err: err})
		return &Result{Content: row}, errors.Join(err, derr, uerr)
	}
	if err := ctx.Err(); err != nil { // stopped while waiting for the lock
		return fail(err)
	}
	data, fname, ctype, err := k.load(ctx, c)
	if err != nil {
		return fail(err)
	}
	owner := row.UserID
	kind := c.Reader
	if kind == "" {
		kind = reader.Detect(fname, ctype)
		// neither name nor type said (an upload named "paper", an
		// octet-stream): a PDF or a DOCX (a zip) says so in its first
		// bytes; a text given as text is text
		if kind == reader.Text && c.Text == "" {
			switch {
			case bytes.HasPrefix(data, []byte("%PDF-")):
				kind = reader.PDF
			case bytes.HasPrefix(data, []byte("PK\x03\x04")):
				kind = reader.DOCX
			}
		}
	}
	if kind != reader.PDF && kind != reader.DOCX {
		data = decodeCharset(data, ctype, kind == reader.HTML)
	}
	ch := c.Chunker
	if ch == nil {
		ch = k.cfg.Chunker
	}
	if ch == nil {
		ch = chunk.Recursive{}
		if kind == reader.Markdown || kind == reader.HTML {
			ch = chunk.Markdown{}
		}
	}
	// the hash says how the chunks were made too: the same bytes inserted
	// again with another reader or chunker (an upload again with another
	// chunk_size) were skipped as unchanged, and kept the old chunks
	sum := sha256.Sum256(data)
	made := sha256.Sum256(fmt.Appendf(sum[:], "\x00%s\x00%s", kind, chunkerKey(ch)))
	contentHash := hex.EncodeToString(made[:]) + "-" + row.ID
	sctx := ctx
	if owner != "" {
		sctx = db.WithUserScope(ctx, owner)
	}
	if existing && row.Status == db.KnowledgeCompleted {
		if ok, err := k.cfg.Vectors.HasContentHash(sctx, contentHash); err == nil && ok {
			report(Progress{Done: true, Skipped: true})
			return &Result{Content: row, Skipped: true}, nil
		}
	}
	if existing && row.Status != db.KnowledgeProcessing {
		// onto the row as it is now: row was read before the wait for the
		// lock and the load (a URL's fetch), and an Update made meanwhile
		// would be written over with the old name and metadata
		if err := k.record(ctx, row, func(cur *db.KnowledgeContent) {
			cur.Status, cur.StatusMessage = db.KnowledgeProcessing, ""
		}); err != nil {
			if errors.Is(err, db.ErrNotFound) { // by another process: this one's Delete stops the insert
				report(Progress{Done: true, Err: ErrContentDeleted})
				return nil, fmt.Errorf("%w: %s", ErrContentDeleted, row.ID)
			}
			return nil, err
		}
	}
	text, err := reader.Read(kind, data)
	if err != nil {
		return fail(err)
	}
	pieces := ch.Chunk(text)
	if len(pieces) == 0 {
		return fail(reader.ErrNoText)
	}
	report(Progress{Chunks: len(pieces)})
	vecs := make([][]float32, 0, len(pieces))
	for start := 0; start < len(pieces); start += 64 {
		batch := pieces[start:min(start+64, len(pieces))]
		v, err := k.cfg.Embedder.Embed(ctx, batch)
		if err != nil {
			return fail(fmt.Errorf("knowledge: embedding: %w", err))
		}
		if len(v) != len(batch) {
			return fail(fmt.Errorf("knowledge: embedding: asked for %d vectors, got %d", len(batch), len(v)))
		}
		vecs = append(vecs, v...)
		report(Progress{Chunks: len(pieces), Embedded: len(vecs)})
	}
	// the chunks take the row's name and metadata as they are now: an
	// Update made while this insert read and embedded changed them
	cur, err := k.cfg.DB.GetKnowledgeContent(ctx, row.ID)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			report(Progress{Done: true, Err: ErrContentDeleted})
			return nil, fmt.Errorf("%w: %s", ErrContentDeleted, row.ID)
		}
		return fail(err)
	}
	row.Name, row.Description, row.Metadata = cur.Name, cur.Description, cur.Metadata
	base, err := decodeMetadata(cur)
	if err != nil {
		return fail(err)
	}
	rows := make([]vectordb.Row, len(pieces))
	for i, p := range pieces {
		// The chunk's own keys win over the content's (as Agno's chunkers
		// set them, and as Update keeps them): a content whose metadata
		// named "chunk" gave every chunk that one number.
		meta := make(map[string]any, len(base)+len(chunkKeys))
		for key, v := range base {
			meta[key] = v
		}
		meta[chunkKeys[0]], meta[chunkKeys[1]] = i+1, utf8.RuneCountInString(p)
		rows[i] = vectordb.Row{ID: fmt.Sprintf("%s-%d", contentHash[:32]+row.ID[:8], i), ContentID: row.ID, ContentHash: contentHash,
			Name: row.Name, Content: p, Metadata: meta, Vector: vecs[i], UserID: owner}
	}
	if err := k.replaceChunks(sctx, row.ID, rows); err != nil {
		return fail(err)
	}
	// the chunks are written: the row says so even if ctx ends now
	rctx, rcancel := recordContext(ctx)
	defer rcancel()
	// the row and then the chunks, with no Update in between (edits)
	err = func() error {
		defer k.edits.lock(row.ID, nil)()
		written := string(row.Metadata)
		err := k.record(rctx, row, func(cur *db.KnowledgeContent) {
			cur.Status, cur.StatusMessage = db.KnowledgeCompleted, ""
			cur.Size, cur.Type = int64(len(data)), reader.MIME(kind)
		})
		if err != nil || string(row.Metadata) == written {
			return err
		}
		// an Update came between the chunks' metadata and now: theirs
		// follows it (an Update after this one's read finds the chunks
		// written and updates them itself)
		meta, err := decodeMetadata(row)
		if err != nil {
			return err
		}
		return k.cfg.Vectors.UpdateMetadata(recordScope(rctx, owner), row.ID, meta, chunkKeys...)
	}()
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			// the row was deleted meanwhile (by another process, or before
			// this insert started): the chunks just written go too, or
			// searches would find content that no longer exists
			derr := k.cfg.Vectors.DeleteContent(recordScope(rctx, owner), row.ID)
			report(Progress{Done: true, Err: ErrContentDeleted})
			return nil, errors.Join(fmt.Errorf("%w: %s", ErrContentDeleted, row.ID), derr)
		}
		return nil, err
	}
	report(Progress{Chunks: len(pieces), Embedded: len(pieces), Done: true})
	return &Result{Content: row, Chunks: len(pieces)}, nil
}

// replaceChunks puts rows in place of the content's chunks: in one step
// where the store can (vectordb.ContentReplacer), as the lock this
// process holds does not keep another process's insert of the content
// (another replica's) from deleting between this one's delete and upsert,
// which left both versions' chunks for every search to find.
func (k *Knowledge) replaceChunks(ctx context.Context, contentID string, rows []vectordb.Row) error {
	if r, ok := k.cfg.Vectors.(vectordb.ContentReplacer); ok {
		return r.ReplaceContent(ctx, contentID, rows)
	}
	if err := k.cfg.Vectors.DeleteContent(ctx, contentID); err != nil {
		return err
	}
	return k.cfg.Vectors.Upsert(ctx, rows)
}

// chunkerKey says how ch cuts text, for the content hash: the package's
// own chunkers by their type and settings, another by its type and Name.
// Another chunker's settings are not printed: its fields may hold
// pointers or functions, whose addresses differ in every process, and the
// same content inserted again with the same chunker would never be
// skipped as unchanged.
func chunkerKey(ch chunk.Chunker) string {
	switch ch.(type) {
	case chunk.Fixed, chunk.Recursive, chunk.Markdown, *chunk.Fixed, *chunk.Recursive, *chunk.Markdown:
		return fmt.Sprintf("%T%+v", ch, ch)
	}
	return fmt.Sprintf("%T:%s", ch, ch.Name())
}
