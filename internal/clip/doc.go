// Package clip shortens text for messages, summaries and logs without
// cutting a UTF-8 sequence in two: it owns the one rune-boundary cut that
// the packages showing a bounded piece of a string share.
package clip
