// Package model owns the provider-neutral language-model contract: the Model
// interface (Invoke and Stream as iter.Seq2), messages with multimodal parts, tool
// calls, usage, streaming chunks, classified provider errors and retry with backoff.
package model
