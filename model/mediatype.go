package model

import "strings"

// MediaType is a part's MIME type as providers take it in a media type
// field or a data: URL: without parameters (a sniffed or uploaded
// "text/plain; charset=utf-8", whose space makes a malformed data: URL),
// trimmed, in lower case, and image/jpg (an alias uploads and data: URLs
// use) as image/jpeg.
func MediaType(mt string) string {
	mt, _, _ = strings.Cut(mt, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	if mt == "image/jpg" {
		return "image/jpeg"
	}
	return mt
}
