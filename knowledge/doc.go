// Package knowledge owns knowledge bases (RAG): inserting content from text,
// files and URLs (SSRF-safe, size- and time-capped), reading, chunking and
// embedding it into a vectordb.Store with its status in agno_knowledge, and
// searching it under the caller's user scope.
package knowledge
