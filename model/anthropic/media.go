package anthropic

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentryhq/agentry/model"
)

// partBlock maps a multimodal part; nil means nothing to send (empty text).
func partBlock(p model.Part) (any, error) {
	switch p.Type {
	case model.PartText:
		if p.Text == "" {
			return nil, nil
		}
		return textBlock{Type: "text", Text: p.Text}, nil
	case model.PartImage:
		src, err := mediaSource(p)
		if err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		return sourceBlock{Type: "image", Source: src}, nil
	case model.PartFile:
		mime := p.MIMEType
		if mime == "" && len(p.Data) > 0 {
			mime = http.DetectContentType(p.Data)
		}
		if mime == "" && strings.HasSuffix(strings.ToLower(p.URL), ".pdf") {
			mime = "application/pdf"
		}
		mime = model.MediaType(mime)
		switch {
		case mime == "application/pdf":
			src, err := mediaSource(model.Part{Type: p.Type, URL: p.URL, Data: p.Data, MIMEType: mime})
			if err != nil {
				return nil, fmt.Errorf("document: %w", err)
			}
			return sourceBlock{Type: "document", Source: src, Title: p.Name}, nil
		case strings.HasPrefix(mime, "text/") && len(p.Data) > 0:
			return sourceBlock{Type: "document", Title: p.Name,
				Source: wireSource{Type: "text", MediaType: "text/plain", Data: string(p.Data)}}, nil
		}
		return nil, fmt.Errorf("file %q of type %q is not supported; send PDF or plain text", p.Name, mime)
	case model.PartAudio, model.PartVideo:
		return nil, fmt.Errorf("%s parts are not supported by the Messages API", p.Type)
	}
	return nil, fmt.Errorf("unknown part type %q", p.Type)
}

// mediaSource picks a url source for remote media and base64 for inline bytes
// or data: URLs.
func mediaSource(p model.Part) (wireSource, error) {
	if len(p.Data) > 0 {
		mime := p.MIMEType
		if mime == "" {
			mime = http.DetectContentType(p.Data)
		}
		return wireSource{Type: "base64", MediaType: model.MediaType(mime), Data: base64.StdEncoding.EncodeToString(p.Data)}, nil
	}
	if rest, ok := strings.CutPrefix(p.URL, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mime, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 || mime == "" {
			return wireSource{}, errors.New("data URL must be base64 with a media type (data:image/png;base64,...)")
		}
		return wireSource{Type: "base64", MediaType: model.MediaType(mime), Data: data}, nil
	}
	if p.URL != "" {
		return wireSource{Type: "url", URL: p.URL}, nil
	}
	return wireSource{}, errors.New("part has neither data nor URL")
}
