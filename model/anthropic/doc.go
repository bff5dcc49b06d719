// Package anthropic owns the Anthropic Messages API provider for model.Model:
// request mapping (system, tool use, tool results, images, documents, extended
// thinking, structured output via a forced tool), non-streaming and SSE decoding.
package anthropic
