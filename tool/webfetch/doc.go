// Package webfetch owns the web_fetch tool: one URL in, readable Markdown or
// text out (main content by go-readability, Markdown by html-to-markdown),
// fetched through the network guard with size and time caps and, when asked,
// robots.txt obeyed.
package webfetch
