package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/tool"
)

// remoteTool is one tool of the server.
type remoteTool struct {
	k    *Toolkit
	name string // the server's name for it (def.Name may be prefixed)
	def  tool.Definition
}

func (t *remoteTool) Definition() tool.Definition { return t.def }

// Call calls the tool on the server: a dead server, a timeout or an error
// result is a Go error (the model sees its text); output is capped.
func (t *remoteTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := t.k.call(ctx, "calling "+t.name, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: t.name, Arguments: args})
	})
	if err != nil {
		return "", err
	}
	text := t.k.capOutput(render(res.Content, res.StructuredContent))
	if res.IsError {
		return "", fmt.Errorf("%w: %s on %s: %s", ErrToolFailed, t.name, t.k.cfg.Name, text)
	}
	return text, nil
}

// call runs fn on a live connection under the call timeout. A session the
// server no longer knows (an HTTP server that restarted answers 404 for it,
// without running the request) is replaced by a new one and fn runs once
// more on it, as MCP's streamable HTTP transport says a client must start a
// new session then.
func (k *Toolkit) call(ctx context.Context, what string, fn func(context.Context, *mcp.ClientSession) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	res, forgotten, err := k.callOnce(ctx, what, fn)
	if forgotten {
		k.cfg.Logger.Info("mcp server forgot the session; starting a new one", "server", k.cfg.Name)
		res, _, err = k.callOnce(ctx, what, fn)
	}
	return res, err
}

// callOnce is one try of call; forgotten reports that it failed because the
// server no longer knew the session (the connection is dropped then).
func (k *Toolkit) callOnce(ctx context.Context, what string, fn func(context.Context, *mcp.ClientSession) (*mcp.CallToolResult, error)) (res *mcp.CallToolResult, forgotten bool, err error) {
	c, err := k.connected(ctx)
	if err != nil {
		return nil, false, err
	}
	cctx, cancel := context.WithTimeout(ctx, k.cfg.Timeout)
	defer cancel()
	res, err = fn(cctx, c.cs)
	if err == nil {
		return res, false, nil
	}
	if ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return nil, false, fmt.Errorf("%w: %s on mcp server %s did not answer within %s", tool.ErrTimeout, strings.TrimPrefix(what, "calling "), k.cfg.Name, k.cfg.Timeout)
	}
	if ctx.Err() != nil {
		return nil, false, fmt.Errorf("mcp server %s: %s: %w", k.cfg.Name, what, context.Cause(ctx))
	}
	if answered(err) {
		// The server refused this request on a live session (invalid
		// params, an unknown resource): the session and its state stay.
		return nil, false, fmt.Errorf("%w: %s on %s: the server answered with an error: %s", ErrToolFailed, strings.TrimPrefix(what, "calling "), k.cfg.Name, k.errText(err))
	}
	if malformed(err) {
		// The server answered, but not with an MCP result: that call
		// fails, and the session (a stdio server's state) stays.
		return nil, false, fmt.Errorf("%w: %s on %s: the server's answer is not a valid MCP result: %s", ErrToolFailed, strings.TrimPrefix(what, "calling "), k.cfg.Name, k.errText(err))
	}
	forgotten = errors.Is(err, mcp.ErrSessionMissing)
	err = k.unavailable(c, what, err)
	// A session the server no longer knows (it restarted, or the process
	// died) is dropped: the next use connects again.
	k.drop(c)
	return nil, forgotten, err
}

// answered reports whether err is a JSON-RPC error response from the server,
// not the connection's end (the SDK fails pending calls of a closing
// connection with JSON-RPC errors of its own codes).
func answered(err error) bool {
	var we *jsonrpc.Error
	if !errors.As(err, &we) || errors.Is(err, mcp.ErrConnectionClosed) {
		return false
	}
	switch we.Code {
	case codeClientClosing, codeServerClosing, codeRejected:
		return false
	}
	return true
}

// malformed reports whether err is the SDK's refusal of a response that
// arrived: its result did not decode as the method's MCP type (a field of
// the wrong JSON type, or content blocks the SDK's decoder refuses, whose
// errors have no type of their own). TestToolkit_AMalformedResultKeepsTheSession
// fails if an SDK update words them otherwise; such an error is then taken
// for a lost connection again, as before.
func malformed(err error) bool {
	if errors.Is(err, mcp.ErrConnectionClosed) {
		return false
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	if errors.As(err, &typeErr) || errors.As(err, &syntaxErr) {
		return true
	}
	// Not the transport's "unsupported content type" of an HTTP response,
	// which breaks the connection.
	msg := err.Error()
	return strings.Contains(msg, `unrecognized content type "`) || strings.Contains(msg, `invalid content type "`) || strings.HasSuffix(msg, "nil content")
}

// The go-sdk's codes for a request that ended with its connection
// (internal/jsonrpc2: ErrClientClosing, ErrServerClosing, ErrRejected).
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// capOutput bounds a result, saying how much was cut.
func (k *Toolkit) capOutput(s string) string {
	cut, truncated := tool.Truncate(s, k.cfg.MaxOutputBytes)
	if !truncated {
		return s
	}
	return cut + fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", len(cut), len(s))
}

// render turns MCP content into the text the model sees: text as is, other
// blocks as short descriptions, structured content as JSON when there is
// no content.
func render(content []mcp.Content, structured any) string {
	var parts []string
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", c.Name, c.URI))
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil {
				if r.Text != "" {
					parts = append(parts, r.Text)
				} else {
					parts = append(parts, fmt.Sprintf("[resource %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
				}
			}
		}
	}
	if len(parts) == 0 && structured != nil {
		if raw, err := json.Marshal(structured); err == nil {
			return string(raw)
		}
	}
	return strings.Join(parts, "\n")
}

// resourceTool reads the server's resources by URI.
type resourceTool struct {
	k    *Toolkit
	name string
}

var resourceSchema = json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string","description":"the resource URI"}},"required":["uri"],"additionalProperties":false}`)

func (t *resourceTool) Definition() tool.Definition {
	return tool.Definition{Name: t.name, Timeout: t.k.cfg.Timeout, Parameters: resourceSchema,
		Description: "Read a resource of the MCP server " + t.k.cfg.Name + " by its URI."}
}

func (t *resourceTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.URI == "" {
		return "", fmt.Errorf("%w: give the resource uri", tool.ErrInvalidArguments)
	}
	var text string
	_, err := t.k.call(ctx, "reading "+in.URI, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: in.URI})
		if err != nil {
			return nil, err
		}
		var parts []string
		for _, c := range res.Contents {
			if c == nil {
				continue // a server's null
			}
			if c.Text != "" {
				parts = append(parts, c.Text)
			} else {
				parts = append(parts, fmt.Sprintf("[%s, %s, %d bytes]", c.URI, c.MIMEType, len(c.Blob)))
			}
		}
		text = strings.Join(parts, "\n")
		return &mcp.CallToolResult{}, nil
	})
	if err != nil {
		return "", err
	}
	return t.k.capOutput(text), nil
}

// Resources lists the server's resources (URI, name, description).
func (k *Toolkit) Resources(ctx context.Context) ([]*mcp.Resource, error) {
	c, err := k.connected(ctx)
	if err != nil {
		return nil, err
	}
	if caps := c.cs.InitializeResult().Capabilities; caps == nil || caps.Resources == nil {
		return nil, nil
	}
	lctx, cancel := context.WithTimeout(ctx, k.cfg.ConnectTimeout)
	defer cancel()
	out, err := listAll(lctx, func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
		res, err := c.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	})
	if err != nil {
		return nil, k.unavailable(c, "listing resources", err)
	}
	return out, nil
}
