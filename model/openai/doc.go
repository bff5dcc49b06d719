// Package openai owns the OpenAI Chat Completions provider: request mapping,
// non-streaming and SSE-streamed responses, and error classification. It also
// serves any OpenAI-compatible server (Ollama, vLLM, LM Studio) through BaseURL.
package openai
