package codemode

import (
	"context"

	"github.com/agentryhq/agentry/offload"
)

// OffloadResults backs the `results` handle with package offload: code reads
// the results the agent offloaded in the cell's session, with the same access
// checks as the read_result tool (another session's or user's result is not
// found).
func OffloadResults(o *offload.Offloader) Results { return offloadResults{o} }

type offloadResults struct{ o *offload.Offloader }

func scopeOf(s Scope) offload.Scope { return offload.Scope{SessionID: s.SessionID, UserID: s.UserID} }

func (r offloadResults) Get(ctx context.Context, s Scope, id string) (string, error) {
	text, _, err := r.o.Get(ctx, scopeOf(s), id)
	return text, err
}

func (r offloadResults) Read(ctx context.Context, s Scope, id string, rr ReadRange) (ResultPage, error) {
	p, err := r.o.Read(ctx, scopeOf(s), id, offload.ReadRange{StartLine: rr.StartLine, EndLine: rr.EndLine, StartChar: rr.StartChar})
	if err != nil {
		return ResultPage{}, err
	}
	return ResultPage{Text: p.Text, StartLine: p.StartLine, EndLine: p.EndLine, LineCount: p.LineCount,
		NextStartLine: p.NextStartLine, NextStartChar: p.NextStartChar}, nil
}

func (r offloadResults) Search(ctx context.Context, s Scope, id, pattern string, contextLines int) ([]ResultMatch, error) {
	ms, err := r.o.Search(ctx, scopeOf(s), id, pattern, contextLines)
	if err != nil {
		return nil, err
	}
	out := make([]ResultMatch, len(ms))
	for i, m := range ms {
		out[i] = ResultMatch{LineNumber: m.LineNumber, Line: m.Line, Before: m.Before, After: m.After}
	}
	return out, nil
}

func (r offloadResults) IDs(ctx context.Context, s Scope, limit int) ([]ResultInfo, error) {
	rows, err := r.o.List(ctx, scopeOf(s), max(limit, 1))
	if err != nil {
		return nil, err
	}
	out := make([]ResultInfo, len(rows))
	for i, row := range rows {
		out[i] = ResultInfo{ResultID: row.ResultID, ToolName: row.ToolName, LineCount: int(row.LineCount), SizeBytes: row.SizeBytes, ContentType: row.ContentType}
	}
	return out, nil
}
