package model

import (
	"context"
	"fmt"
	"io"
)

// MaxResponseBody bounds a provider's non-streaming answer (32 MiB).
const MaxResponseBody = 32 << 20

// ReadResponse reads a provider's non-streaming answer body of at most
// MaxResponseBody bytes. A read cut short by ctx returns ctx's error; any
// other failed read, and a longer body, is ErrMalformedResponse. provider
// prefixes the error messages ("gemini", "bedrock", …).
func ReadResponse(ctx context.Context, provider string, body io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(body, MaxResponseBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: reading response: %w", provider, ctx.Err())
		}
		return nil, fmt.Errorf("%s: reading response: %w: %w", provider, ErrMalformedResponse, err)
	}
	if len(data) > MaxResponseBody {
		return nil, fmt.Errorf("%s: response larger than %d bytes: %w", provider, MaxResponseBody, ErrMalformedResponse)
	}
	return data, nil
}
