package codemode

import "context"

// Results reads the tool results offloaded in one session. The offload
// package implements it; CodeMode exposes it to code as the `results`
// handle. A result of another session (or user) must be reported as not
// found. Errors reach the code as exceptions with the error's text.
type Results interface {
	// Get returns the whole stored text of a result.
	Get(ctx context.Context, s Scope, resultID string) (string, error)
	// Read returns one bounded page of a result.
	Read(ctx context.Context, s Scope, resultID string, r ReadRange) (ResultPage, error)
	// Search returns the lines of a result matching a regular expression.
	Search(ctx context.Context, s Scope, resultID, pattern string, contextLines int) ([]ResultMatch, error)
	// IDs lists the session's stored results, newest first.
	IDs(ctx context.Context, s Scope, limit int) ([]ResultInfo, error)
}

// Scope is the session (and its user, "" for none) whose results a call
// reads: the session of the cell making it.
type Scope struct {
	SessionID string
	UserID    string
}

// ReadRange selects a page: lines are 1-based and inclusive; zero EndLine
// means as far as the page size allows.
type ReadRange struct {
	StartLine int `json:"start_line,omitempty"`
	EndLine   int `json:"end_line,omitempty"`
	StartChar int `json:"start_char,omitempty"`
}

// ResultPage is one page of a stored result.
type ResultPage struct {
	Text          string `json:"text"`
	StartLine     int    `json:"start_line"`
	EndLine       int    `json:"end_line"`
	LineCount     int    `json:"line_count"`
	NextStartLine int    `json:"next_start_line,omitempty"`
	NextStartChar int    `json:"next_start_char,omitempty"`
}

// ResultMatch is one line of a result matching a search.
type ResultMatch struct {
	LineNumber int      `json:"line_number"`
	Line       string   `json:"line"`
	CharOffset int      `json:"char_offset"`
	Before     []string `json:"before,omitempty"`
	After      []string `json:"after,omitempty"`
}

// ResultInfo describes a stored result.
type ResultInfo struct {
	ResultID    string `json:"result_id"`
	ToolName    string `json:"tool_name,omitempty"`
	LineCount   int    `json:"line_count"`
	SizeBytes   int64  `json:"size_bytes"`
	ContentType string `json:"content_type,omitempty"`
}
