package sqltools

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrRefused marks a statement the toolkit will not run; the message says
// which statements are accepted.
var ErrRefused = errors.New("sqltools: statement refused")

// Dialects.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
	MySQL    = "mysql"
)

// statement is what run_sql_query learned about the model's SQL before
// sending it: whether it only reads, and for a write its one target table.
type statement struct {
	write     bool
	verb      string // upper-case first keyword
	table     name   // write target
	returning bool   // a write that returns rows
}

// name is a possibly schema-qualified table name, each part normalised as
// the engine compares it.
type name []string

func (n name) String() string { return strings.Join(n, ".") }

type tokenKind int

const (
	tWord   tokenKind = iota // keyword or unquoted identifier
	tIdent                   // quoted identifier
	tString                  // string literal
	tPunct                   // one character of punctuation
	tOther                   // numbers, parameters, operators
)

type token struct {
	kind tokenKind
	text string // unquoted text for identifiers and strings
}

var readVerbs = []string{"SELECT", "WITH", "VALUES", "TABLE", "SHOW", "EXPLAIN", "DESCRIBE", "DESC"}

// classify decides whether sql is one read statement or one write to a single
// table. It is a gate in front of the engine's own read-only transaction, not
// a replacement for it: anything it cannot place is refused.
func classify(dialect, sql string) (statement, error) {
	if dialect == MySQL {
		// Checked on the raw text, not on tokens: with ANSI_QUOTES or
		// NO_BACKSLASH_ESCAPES the server ends quoted text elsewhere than
		// the lexer below, and could find INTO OUTFILE in what it took for a
		// string.
		upper := strings.ToUpper(sql)
		for _, w := range []string{"OUTFILE", "DUMPFILE"} {
			if strings.Contains(upper, w) {
				return statement{}, fmt.Errorf("%w: %s writes a file on the server (the word is refused anywhere in the query, even in a string)", ErrRefused, w)
			}
		}
		// A read, but of any file the server process may read (with the
		// FILE privilege and secure_file_priv unset, as root has by
		// default): the server's own files are no table of the database.
		// MySQL cannot run SQL given as text, so the word is enough.
		if strings.Contains(upper, "LOAD_FILE") {
			return statement{}, fmt.Errorf("%w: LOAD_FILE reads a file on the server (the word is refused anywhere in the query, even in a string)", ErrRefused)
		}
	}
	toks, err := tokenize(dialect, sql)
	if err != nil {
		return statement{}, err
	}
	for len(toks) > 0 && toks[len(toks)-1].kind == tPunct && toks[len(toks)-1].text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) == 0 {
		return statement{}, fmt.Errorf("%w: the query is empty", ErrRefused)
	}
	for _, t := range toks {
		if t.kind == tPunct && t.text == ";" {
			return statement{}, fmt.Errorf("%w: send one statement per call (found ';' before the end)", ErrRefused)
		}
	}
	first := 0
	for first < len(toks) && toks[first].kind == tPunct && toks[first].text == "(" {
		first++
	}
	if first == len(toks) || toks[first].kind != tWord {
		return statement{}, fmt.Errorf("%w: a statement starts with a keyword such as SELECT", ErrRefused)
	}
	verb := strings.ToUpper(toks[first].text)
	if slices.Contains(readVerbs, verb) {
		return statement{verb: verb}, nil
	}
	if first > 0 {
		return statement{}, fmt.Errorf("%w: only a SELECT may be parenthesised", ErrRefused)
	}
	p := &parser{toks: toks, pos: 1, dialect: dialect}
	st := statement{write: true, verb: verb}
	switch verb {
	case "INSERT", "REPLACE":
		err = p.insertTarget(verb)
	case "UPDATE":
		err = p.updateTarget()
	case "DELETE":
		err = p.deleteTarget()
	default:
		return statement{}, fmt.Errorf("%w: %s statements are not run; use one SELECT, WITH, VALUES, SHOW or EXPLAIN statement (or INSERT, UPDATE, DELETE on a table in allow_write)", ErrRefused, verb)
	}
	if err != nil {
		return statement{}, err
	}
	st.table = p.target
	for _, t := range toks {
		if t.kind == tWord && strings.EqualFold(t.text, "RETURNING") {
			st.returning = true
		}
	}
	return st, nil
}

type parser struct {
	toks    []token
	pos     int
	dialect string
	target  name
}

func (p *parser) peekWord() string {
	if p.pos < len(p.toks) && p.toks[p.pos].kind == tWord {
		return strings.ToUpper(p.toks[p.pos].text)
	}
	return ""
}

func (p *parser) peekPunct(s string) bool {
	return p.pos < len(p.toks) && p.toks[p.pos].kind == tPunct && p.toks[p.pos].text == s
}

func (p *parser) atEnd() bool { return p.pos >= len(p.toks) }

// skipWords consumes any of the given modifiers (LOW_PRIORITY, IGNORE, ...).
func (p *parser) skipWords(words ...string) {
	for slices.Contains(words, p.peekWord()) {
		p.pos++
	}
}

// skipConflictClause consumes SQLite's "OR REPLACE" style clause.
func (p *parser) skipConflictClause() {
	if p.dialect == SQLite && p.peekWord() == "OR" {
		p.pos++
		p.skipWords("REPLACE", "ROLLBACK", "ABORT", "FAIL", "IGNORE")
	}
}

func (p *parser) refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// tableName reads ident(.ident){0,2}.
func (p *parser) tableName() error {
	var n name
	for {
		if p.atEnd() || (p.toks[p.pos].kind != tWord && p.toks[p.pos].kind != tIdent) {
			return p.refuse("expected a table name")
		}
		t := p.toks[p.pos]
		n = append(n, normalise(p.dialect, t))
		p.pos++
		if !p.peekPunct(".") {
			break
		}
		p.pos++
		if len(n) == 3 {
			return p.refuse("table name %q has too many parts", n)
		}
	}
	p.target = n
	return nil
}

// alias consumes "[AS] alias" unless the next word is one of stop.
func (p *parser) alias(stop ...string) {
	if p.peekWord() == "AS" {
		p.pos += 2
		return
	}
	if p.atEnd() {
		return
	}
	t := p.toks[p.pos]
	if t.kind == tIdent || (t.kind == tWord && !slices.Contains(stop, strings.ToUpper(t.text))) {
		p.pos++
	}
}

func (p *parser) insertTarget(verb string) error {
	p.skipConflictClause()
	p.skipWords("LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE")
	if p.peekWord() != "INTO" {
		return p.refuse("write %s INTO table ...", verb)
	}
	p.pos++
	return p.tableName()
}

func (p *parser) updateTarget() error {
	p.skipConflictClause()
	p.skipWords("LOW_PRIORITY", "IGNORE", "ONLY")
	if err := p.tableName(); err != nil {
		return err
	}
	p.alias("SET")
	if p.peekWord() != "SET" {
		return p.refuse("UPDATE changes one table: write UPDATE table [alias] SET ... (joins and lists of tables are not run)")
	}
	return nil
}

func (p *parser) deleteTarget() error {
	p.skipWords("LOW_PRIORITY", "QUICK", "IGNORE")
	if p.peekWord() != "FROM" {
		return p.refuse("DELETE changes one table: write DELETE FROM table ...")
	}
	p.pos++
	p.skipWords("ONLY")
	if err := p.tableName(); err != nil {
		return err
	}
	next := []string{"WHERE", "USING", "ORDER", "LIMIT", "RETURNING"}
	p.alias(next...)
	if p.dialect == MySQL && p.peekWord() == "USING" {
		// MySQL's multi-table DELETE: the names after FROM are aliases of
		// tables in USING (DELETE FROM notes USING secrets AS notes
		// deletes from secrets).
		return p.refuse("DELETE ... USING (a multi-table delete) is not run on MySQL: write DELETE FROM table [WHERE ...], with a subquery to match other tables")
	}
	if p.atEnd() || slices.Contains(next, p.peekWord()) {
		return nil
	}
	return p.refuse("DELETE changes one table: write DELETE FROM table [alias] [WHERE ...]")
}

// normalise folds an identifier the way the engine compares it: Postgres
// folds unquoted names to lower case; SQLite ignores ASCII case; MySQL table
// names are compared as written (case-sensitive on Linux).
func normalise(dialect string, t token) string {
	switch {
	case dialect == SQLite:
		return strings.ToLower(t.text)
	case dialect == Postgres && t.kind == tWord:
		return strings.ToLower(t.text)
	}
	return t.text
}

// tokenize splits sql into tokens, dropping comments and whitespace. It
// refuses MySQL executable comments (/*! ... */), which MySQL runs as code.
func tokenize(dialect, sql string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-' && (dialect != MySQL || mysqlDashComment(sql[i+2:])), c == '#' && dialect == MySQL:
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			if strings.HasPrefix(sql[i:], "/*!") || strings.HasPrefix(sql[i:], "/*M!") {
				return nil, fmt.Errorf("%w: executable comments (/*! ... */) are not accepted", ErrRefused)
			}
			n := commentLen(dialect, sql[i:])
			if n < 0 {
				return nil, fmt.Errorf("%w: unterminated /* comment", ErrRefused)
			}
			i += n
		case c == '\'' || c == '"' || c == '`' || c == '[' && dialect == SQLite:
			closer := c
			if c == '[' {
				closer = ']'
			}
			backslash := c == '\'' && (dialect == MySQL || isEString(sql, i)) || c == '"' && dialect == MySQL
			text, n, err := quoted(sql[i:], closer, backslash)
			if err != nil {
				return nil, err
			}
			kind := tIdent
			if c == '\'' || (c == '"' && dialect == MySQL) {
				kind = tString
			}
			toks = append(toks, token{kind: kind, text: text})
			i += n
		case c == '$' && dialect == Postgres && dollarTag(sql[i:]) != "":
			tag := dollarTag(sql[i:])
			end := strings.Index(sql[i+len(tag):], tag)
			if end < 0 {
				return nil, fmt.Errorf("%w: unterminated %s string", ErrRefused, tag)
			}
			toks = append(toks, token{kind: tString, text: sql[i+len(tag) : i+len(tag)+end]})
			i += len(tag) + end + len(tag)
		case isWordStart(c):
			j := i + 1
			for j < len(sql) && isWordPart(sql[j]) {
				j++
			}
			toks = append(toks, token{kind: tWord, text: sql[i:j]})
			i = j
		case strings.IndexByte("();,.*", c) >= 0:
			toks = append(toks, token{kind: tPunct, text: string(c)})
			i++
		default:
			j := i + 1
			for j < len(sql) && !isWordStart(sql[j]) && strings.IndexByte("();,.*'\"`[ \t\n\r-/#$", sql[j]) < 0 {
				j++
			}
			toks = append(toks, token{kind: tOther, text: sql[i:j]})
			i = j
		}
	}
	return toks, nil
}

// mysqlDashComment reports whether the text after "--" makes it a comment in
// MySQL, which needs a space or control character there: 2--1 is 2 - -1.
func mysqlDashComment(rest string) bool {
	return rest == "" || rest[0] <= ' ' || rest[0] == 0x7f
}

// commentLen returns the length of the block comment at the start of s, or
// -1 when it does not end. Postgres nests block comments (/* /* */ */ is one
// comment); MySQL and SQLite end one at the first */.
func commentLen(dialect, s string) int {
	depth := 0
	for i := 0; i+1 < len(s); i++ {
		switch {
		case s[i] == '/' && s[i+1] == '*' && (depth == 0 || dialect == Postgres):
			depth++
			i++
		case s[i] == '*' && s[i+1] == '/':
			depth--
			i++
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// isEString reports a Postgres E'...' string, the one form with backslash
// escapes when standard_conforming_strings is on.
func isEString(sql string, i int) bool {
	return i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i == 1 || !isWordPart(sql[i-2]))
}

// quoted reads a quoted literal or identifier starting at s[0]; a doubled
// closer escapes it, and so does a backslash when backslash is set.
func quoted(s string, closer byte, backslash bool) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch {
		case backslash && s[i] == '\\' && i+1 < len(s):
			b.WriteByte(s[i+1])
			i++
		case s[i] == closer:
			if i+1 < len(s) && s[i+1] == closer && closer != ']' {
				b.WriteByte(closer)
				i++
				continue
			}
			return b.String(), i + 1, nil
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, fmt.Errorf("%w: unterminated quoted text (%c)", ErrRefused, s[0])
}

// dollarTag returns the opening tag of a Postgres dollar-quoted string ($$ or
// $name$) at the start of s, or "".
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		switch {
		case s[j] == '$':
			return s[:j+1]
		case isWordPart(s[j]) && !(j == 1 && s[j] >= '0' && s[j] <= '9'):
		default:
			return ""
		}
	}
	return ""
}

func isWordStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}

func isWordPart(c byte) bool { return isWordStart(c) || '0' <= c && c <= '9' || c == '$' }
