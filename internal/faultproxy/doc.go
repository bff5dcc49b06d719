// Package faultproxy is a loopback TCP proxy for tests that need a real
// database connection to fail: Cut drops every connection and refuses new
// ones, Stall keeps connections open but stops forwarding bytes, Restore
// goes back to forwarding, LoseReplyTo drops the reply to one request (a
// commit that happened but was never acknowledged). Nothing but tests uses
// it.
package faultproxy
