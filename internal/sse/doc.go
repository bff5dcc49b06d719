// Package sse owns decoding of Server-Sent Events streams (the framing model
// providers stream in) per the WHATWG event-stream rules, with a bounded line size.
package sse
