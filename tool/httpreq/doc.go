// Package httpreq owns the http_request tool: one HTTP request (method, URL,
// headers, body) to an allow-listed host, through the network guard, with
// request and response size caps and a timeout.
package httpreq
