package agentos

import "strings"

// uploadTypes are the MIME types of the file name extensions Agno sorts an
// upload by when its Content-Type says nothing (EXTENSION_CATEGORY in
// agno/os/utils.py).
var uploadTypes = map[string]string{
	"pdf": "application/pdf", "json": "application/json", "js": "text/javascript", "py": "text/x-python",
	"docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "doc": "application/msword",
	"pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation", "ppt": "application/vnd.ms-powerpoint",
	"xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xls": "application/vnd.ms-excel",
	"msg": "application/vnd.ms-outlook", "txt": "text/plain", "html": "text/html", "htm": "text/html", "css": "text/css",
	"md": "text/markdown", "markdown": "text/markdown", "csv": "text/csv", "xml": "text/xml", "rtf": "text/rtf",
	"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp", "bmp": "image/bmp",
	"tiff": "image/tiff", "tif": "image/tiff", "avif": "image/avif", "heic": "image/heic", "heif": "image/heif",
	"wav": "audio/wav", "mp3": "audio/mpeg", "ogg": "audio/ogg", "m4a": "audio/mp4", "aac": "audio/aac", "flac": "audio/flac",
	"flv": "video/x-flv", "mov": "video/quicktime", "mpeg": "video/mpeg", "mpg": "video/mpeg", "mp4": "video/mp4",
	"webm": "video/webm", "wmv": "video/x-ms-wmv", "3gp": "video/3gpp",
}

// typeByExtension is the type of an upload whose Content-Type was missing
// or application/octet-stream (a part without one is read as that), from
// its file name's extension as Agno sorts it: ok is false when the upload
// has a type of its own or an extension Agno does not know.
func typeByExtension(f uploadedFile) (ext, mimeType string, ok bool) {
	if mt, _, _ := strings.Cut(f.ContentType, ";"); strings.TrimSpace(strings.ToLower(mt)) != "application/octet-stream" {
		return "", "", false
	}
	i := strings.LastIndexByte(f.Filename, '.')
	if i < 0 {
		return "", "", false
	}
	ext = strings.ToLower(f.Filename[i+1:])
	mimeType, ok = uploadTypes[ext]
	return ext, mimeType, ok
}
