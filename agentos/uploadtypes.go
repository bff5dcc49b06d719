package agentos

import (
	"net/http"
	"strings"
)

// Upload kinds, as Agno's classify_upload_file sorts a run's files.
const (
	uploadImage    = "image"
	uploadAudio    = "audio"
	uploadVideo    = "video"
	uploadDocument = "document"
)

// uploadKinds are the content types Agno takes for a run's files, by kind
// (IMAGE_MIME_TYPES, AUDIO_MIME_TYPES, VIDEO_MIME_TYPES and
// DOCUMENT_MIME_TYPES in agno/os/utils.py); any other is refused.
var uploadKinds = map[string]string{
	"image/png": uploadImage, "image/jpeg": uploadImage, "image/jpg": uploadImage, "image/gif": uploadImage,
	"image/webp": uploadImage, "image/bmp": uploadImage, "image/tiff": uploadImage, "image/tif": uploadImage,
	"image/avif": uploadImage, "image/heic": uploadImage, "image/heif": uploadImage,
	"audio/wav": uploadAudio, "audio/wave": uploadAudio, "audio/mp3": uploadAudio, "audio/mpeg": uploadAudio,
	"audio/ogg": uploadAudio, "audio/mp4": uploadAudio, "audio/m4a": uploadAudio, "audio/aac": uploadAudio,
	"audio/flac":  uploadAudio,
	"video/x-flv": uploadVideo, "video/quicktime": uploadVideo, "video/mpeg": uploadVideo, "video/mpegs": uploadVideo,
	"video/mpgs": uploadVideo, "video/mpg": uploadVideo, "video/mp4": uploadVideo, "video/webm": uploadVideo,
	"video/wmv": uploadVideo, "video/3gpp": uploadVideo,
	// Not in Agno's list, but the type its .wmv extension stands for here
	// (uploadTypes): every extension type has a kind.
	"video/x-ms-wmv":  uploadVideo,
	"application/pdf": uploadDocument, "application/json": uploadDocument, "application/x-javascript": uploadDocument,
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document":   uploadDocument,
	"application/vnd.openxmlformats-officedocument.presentationml.presentation": uploadDocument,
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":         uploadDocument,
	"application/msword": uploadDocument, "application/vnd.ms-powerpoint": uploadDocument,
	"application/vnd.ms-excel": uploadDocument, "application/vnd.ms-outlook": uploadDocument,
	"text/javascript": uploadDocument, "application/x-python": uploadDocument, "text/x-python": uploadDocument,
	"text/plain": uploadDocument, "text/html": uploadDocument, "text/css": uploadDocument,
	"text/markdown": uploadDocument, "text/csv": uploadDocument, "text/xml": uploadDocument, "text/rtf": uploadDocument,
}

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

// errUnsupportedUpload is Agno's answer to a file of a type it does not
// take.
var errUnsupportedUpload = &httpError{Status: http.StatusBadRequest, Detail: "Unsupported file type"}

// classifyUpload sorts an upload as Agno does: by its Content-Type (its
// parameters, which Agno would refuse, ignored), or, when that is missing or
// application/octet-stream, by its file name's extension, whose type it
// then gets. The format is the extension, or the type's subtype without
// one (Agno's extract_format). An upload of another type is refused
// (errUnsupportedUpload).
func classifyUpload(f uploadedFile) (kind, mimeType, format string, err error) {
	ext := ""
	if i := strings.LastIndexByte(f.Filename, '.'); i >= 0 {
		ext = strings.ToLower(f.Filename[i+1:])
	}
	mt, _, _ := strings.Cut(f.ContentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	mimeType = f.ContentType
	kind, ok := uploadKinds[mt]
	if !ok && (mt == "" || mt == "application/octet-stream") {
		if mimeType, ok = uploadTypes[ext]; ok {
			kind = uploadKinds[mimeType]
		}
	}
	if !ok {
		return "", "", "", errUnsupportedUpload
	}
	format = ext
	if format == "" {
		_, format, _ = strings.Cut(mt, "/")
	}
	return kind, mimeType, format, nil
}
