// Package embedder owns the Embedder contract knowledge bases turn text into
// vectors with. Implementations: embedder/local (deterministic hashing, not
// semantic) and embedder/openai (any OpenAI-compatible /embeddings API).
package embedder
