package run

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"reflect"

	"github.com/agentryhq/agentry/internal/lossless"
)

// Media is an image, audio clip, video or file attached to a run (Agno's
// Image, Audio, Video and File). Once stored, Content is replaced by a URL or
// storage reference. Members of a stored media object that Media does not
// model (detail, transcript, media_reference, …) are kept in Extra.
type Media struct {
	ID       string `json:"id,omitempty"`
	URL      string `json:"url,omitempty"`
	Filepath string `json:"filepath,omitempty"`
	// Content is stored base64-encoded under "content", as Agno stores it.
	Content  []byte `json:"-"`
	MIMEType string `json:"mime_type,omitempty"`
	Format   string `json:"format,omitempty"`
	Name     string `json:"name,omitempty"`
	Size     int64  `json:"size,omitempty"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`

	// rawContent is content stored in a form base64 encoding does not give
	// back (plain text, or base64 that is not canonical), written back while
	// Content is unchanged.
	rawContent json.RawMessage
}

type media Media

// MarshalJSON writes the media object with Extra.
func (m Media) MarshalJSON() ([]byte, error) {
	extra := m.Extra
	if m.Content != nil {
		raw := m.rawContent
		if raw == nil || !bytes.Equal(mediaContent(raw), m.Content) {
			var err error
			if raw, err = json.Marshal(m.Content); err != nil { // base64
				return nil, err
			}
		}
		extra = maps.Clone(extra)
		if extra == nil {
			extra = make(map[string]json.RawMessage, 1)
		}
		extra["content"] = raw
	}
	return lossless.Marshal((*media)(&m), extra)
}

// UnmarshalJSON reads a stored media object. Content that is not base64 is
// read as its text's bytes, as Agno does.
func (m *Media) UnmarshalJSON(b []byte) error {
	var v media
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	if raw, ok := extra["content"]; ok && len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			v.Content = mediaContent(raw)
			if base64.StdEncoding.EncodeToString(v.Content) != s {
				v.rawContent = raw
			}
			delete(extra, "content")
		}
	}
	if len(extra) > 0 {
		v.Extra = extra
	}
	*m = Media(v)
	return nil
}

// mediaContent is stored content's bytes: base64-decoded (as Agentry writes
// all content and Agno reads it), else the text itself (Agno writes a text/*
// file's content unencoded).
func mediaContent(raw json.RawMessage) []byte {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b
	}
	return []byte(s)
}

// Input is what the caller sent to start a run (Agno's RunInput).
//
// Agent and team runs store it as an object {input_content, images, videos,
// audios, files}. A workflow run stores the input value itself (a string, or
// the object a workflow's input schema asks for), as Agno's
// WorkflowRunOutput does; such an input reads into InputContent and is
// written back the same way.
type Input struct {
	InputContent any     `json:"input_content,omitempty"`
	Images       []Media `json:"images,omitempty"`
	Videos       []Media `json:"videos,omitempty"`
	Audio        []Media `json:"audios,omitempty"`
	Files        []Media `json:"files,omitempty"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`

	// bare: stored as the value itself, not as a RunInput object; rawBare is
	// that value as stored when Go values cannot give it back as Python
	// reads it (lossless.Lossy: a big integer, 1.0).
	bare    bool
	rawBare json.RawMessage
	// emptyObject: read from {}, which a workflow run stores for an empty
	// dict input (Agno writes input {} back as {}, not as null).
	emptyObject bool
}

// TextInput is a convenience for a plain-text input.
func TextInput(s string) Input { return Input{InputContent: s} }

// Text returns the input content as text (JSON for non-string content).
func (in Input) Text() string { return ContentText(in.InputContent) }

// ContentText is run content as text: a string as is, anything else (structured
// output) as JSON.
func ContentText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

type input Input

// runInputKeys are the members of Agno's RunInput (and "audio", the name older
// Agentry versions stored input audio under).
var runInputKeys = map[string]bool{"input_content": true, "images": true, "videos": true, "audios": true, "files": true, "audio": true}

// MarshalJSON writes the input as a RunInput object, or as the bare value
// when it was stored that way.
func (in Input) MarshalJSON() ([]byte, error) {
	if in.bare {
		if in.rawBare != nil {
			var v any
			if lossless.UnmarshalExact(in.rawBare, &v) == nil && reflect.DeepEqual(v, in.InputContent) {
				return in.rawBare, nil
			}
		}
		return lossless.Encode(in.InputContent)
	}
	storedMember(in.Extra, "input_content", &in.InputContent)
	return lossless.Marshal((*input)(&in), in.Extra)
}

// UnmarshalJSON reads a RunInput object or a bare input value.
func (in *Input) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		return in.unmarshalBare(b)
	}
	var v input
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	if _, stored := extra["input_content"]; v.InputContent == nil && !stored {
		for k := range extra {
			if !runInputKeys[k] {
				// Not a RunInput: a workflow's structured input.
				return in.unmarshalBare(b)
			}
		}
	}
	if raw, ok := extra["audio"]; ok && len(v.Audio) == 0 && json.Unmarshal(raw, &v.Audio) == nil {
		delete(extra, "audio")
	}
	exactMember(extra, "input_content", &v.InputContent)
	if len(extra) > 0 {
		v.Extra = extra
	}
	*in = Input(v)
	in.emptyObject = len(bytes.Trim(b, " \t\r\n{}")) == 0 // {} (an object: it decoded)
	return nil
}

func (in *Input) unmarshalBare(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*in = Input{InputContent: v, bare: true}
	if lossless.Lossy(b) {
		in.rawBare = append(json.RawMessage(nil), b...)
		// Numbers exact (an integer beyond 2^53 is not rounded).
		_ = lossless.UnmarshalExact(b, &in.InputContent)
	}
	return nil
}

// storedBare reports whether the input can be stored as its bare value (a
// workflow run's input): nothing but the content.
func (in *Input) storedBare() bool {
	return in.bare || len(in.Images)+len(in.Videos)+len(in.Audio)+len(in.Files)+len(in.Extra) == 0
}
