// Package embedded is the vector store that needs no service: chunk rows in
// a SQLite file (with an FTS5 index for keyword search) and in-memory HNSW
// graphs, one per owner, saved to a file beside it. A user-scoped search
// walks the user's graph and the shared graph only, so the scope is a
// pre-filter inside the ANN query (docs/adr/embedded-vector-store.md).
package embedded
