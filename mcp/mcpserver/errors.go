package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// errUnavailable is what a client is told when storage fails: never the
// database's own error, which may name its host, port, user and database
// (the HTTP routes answer 503 with the same words).
var errUnavailable = errors.New("the database is unavailable; retry later")

// errInternal is what a client is told of a failure it cannot act on; the
// cause goes to the server log.
var errInternal = errors.New("internal error (details are in the server log)")

// shownError is an error written for the client, shown as it is: a run's
// own outcome (failed, cancelled) or a refusal of the OS's run registry.
type shownError struct{ err error }

func (e *shownError) Error() string { return e.err.Error() }
func (e *shownError) Unwrap() error { return e.err }

func shown(err error) error { return &shownError{err: err} }

// clientError turns a tool's failure into the error its caller sees: the
// server's own answers (not found, forbidden, invalid input), refused
// filters and runs as the HTTP routes word them, and a generic message for
// storage and everything else, whose cause is logged instead.
func (s *Server) clientError(ctx context.Context, toolName string, err error) error {
	var se *shownError
	var corrupt *db.CorruptRowError
	switch {
	case errors.As(err, &se), errors.Is(err, ErrForbidden), errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalidInput):
		return err
	case errors.Is(err, db.ErrNotFound):
		return ErrNotFound
	case errors.Is(err, db.ErrInvalidFilter), errors.Is(err, db.ErrInvalidRecord), errors.Is(err, agent.ErrUnsupportedOption):
		return fmt.Errorf("%w: %s", ErrInvalidInput, err.Error())
	case errors.Is(err, run.ErrNotContinuable), errors.Is(err, run.ErrAlreadyRunning):
		return err
	case errors.Is(err, agent.ErrRequirementUnresolved):
		return errors.New(strings.TrimPrefix(err.Error(), "agent: "))
	case errors.As(err, &corrupt):
		s.logFailure(ctx, toolName, err)
		// Name the row, never its content or the decoder's message, which
		// may quote it.
		return fmt.Errorf("%s %s: stored data cannot be read", corrupt.Table, corrupt.ID)
	case errors.Is(err, db.ErrUnavailable), errors.Is(err, agent.ErrStorage):
		s.logFailure(ctx, toolName, err)
		return errUnavailable
	case errors.Is(err, context.Canceled):
		return errors.New("the call was cancelled")
	}
	s.logFailure(ctx, toolName, err)
	return errInternal
}

func (s *Server) logFailure(ctx context.Context, toolName string, err error) {
	s.log.LogAttrs(ctx, slog.LevelError, "mcp tool call failed", slog.String("tool", toolName), slog.String("err", err.Error()))
}

// addTool registers a built-in tool: its arguments are checked
// (argumentCheck) and its failures reach the client through clientError.
func addTool[In any](s *Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, any]) {
	mcp.AddTool(s.mcp, t, checked(s, t.Name, h))
}

// checked wraps a built-in tool's handler with the argument check and the
// error wording.
func checked[In any](s *Server, name string, h mcp.ToolHandlerFor[In, any]) mcp.ToolHandlerFor[In, any] {
	args := newArgumentCheck[In]()
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		var raw json.RawMessage
		if req != nil && req.Params != nil {
			raw = req.Params.Arguments
		}
		if err := args.check(raw, &in); err != nil {
			return nil, nil, err
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			return nil, nil, s.clientError(ctx, name, err)
		}
		return res, out, nil
	}
}
