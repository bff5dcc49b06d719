// Package faultproxy is a loopback TCP proxy for tests that need a real
// database connection to fail: Cut drops every connection and refuses new
// ones, Stall keeps connections open but stops forwarding bytes, Restore
// goes back to forwarding. Nothing but tests uses it.
package faultproxy
