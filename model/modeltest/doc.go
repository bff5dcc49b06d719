// Package modeltest is the one conformance suite every model provider passes
// over loopback: each provider's test supplies the wire bytes its API sends for
// a set of canonical exchanges, and Run checks what a caller of model.Model sees.
package modeltest
