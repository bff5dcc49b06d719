// Package wirecheck holds the checks a value given over the wire (an HTTP
// route's body, form or query, an MCP tool's arguments) passes before any
// work, so that every entry point refuses the same values in the same words.
package wirecheck
