// Package vectordb owns the vector store contract knowledge bases search:
// chunk rows with an owner (user_id, empty = shared), vector, keyword and
// hybrid search fused by reciprocal rank fusion, metadata filters, and the
// user scope applied inside the query. vectordbtest is the one conformance
// suite; vectordb/embedded (no service) and vectordb/pgvector implement it.
package vectordb
