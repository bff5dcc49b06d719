// Package openaitest holds loopback fixtures in the Chat Completions wire
// format for the conformance tests of every provider that speaks it.
package openaitest
