// Package gemini is the Google Gemini provider (generateContent and its SSE
// stream) in both of Google's modes: the Gemini API with an API key, and
// Vertex AI with OAuth tokens (or an express-mode API key).
package gemini
