package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// ErrMedia: media of the run could not be offloaded or read back from
// Config.MediaStorage; the run is stored as ERROR, without the media.
var ErrMedia = errors.New("agent: media storage failed")

// ReferenceMedia returns a copy of out whose media bytes (input, outputs,
// message parts and member responses) are uploaded to s and replaced by
// media_reference objects: the run as it is stored. out itself is left as
// it is (the run may still be using its messages). Nothing is referenced
// when an upload fails. Teams and workflows store their runs with it. The
// objects are keyed by their owner (media.Owner): dbID (the db_id of the
// database the run is stored in), the run's user (the context's user scope
// when there is one) and its session.
func ReferenceMedia(ctx context.Context, s media.Storage, dbID string, out *run.Output) (*run.Output, error) {
	cp := *out
	owner := media.Owner{DB: dbID, User: out.UserID, Session: out.SessionID}
	if u, ok := db.UserScope(ctx); ok {
		owner.User = u
	}
	list := func(kind string, ms []run.Media) ([]run.Media, error) {
		if !slices.ContainsFunc(ms, func(m run.Media) bool { return m.Content != nil }) {
			return ms, nil
		}
		ms = slices.Clone(ms)
		for i := range ms {
			if ms[i].Content == nil {
				continue
			}
			ref, err := media.Put(ctx, s, owner, kind, ms[i].MIMEType, ms[i].Name, ms[i].Content)
			if err != nil {
				return nil, err
			}
			raw, _ := json.Marshal(ref)
			extra := make(map[string]json.RawMessage, len(ms[i].Extra)+1)
			for k, v := range ms[i].Extra {
				extra[k] = v
			}
			extra["media_reference"] = raw
			ms[i] = run.Media{ID: ms[i].ID, URL: ms[i].URL, MIMEType: ms[i].MIMEType, Format: ms[i].Format, Name: ms[i].Name,
				Size: int64(len(ms[i].Content)), Extra: extra}
		}
		return ms, nil
	}
	var err error
	if out.Input != nil {
		in := *out.Input
		if in.Images, err = list("image", in.Images); err != nil {
			return nil, err
		}
		if in.Videos, err = list("video", in.Videos); err != nil {
			return nil, err
		}
		if in.Audio, err = list("audio", in.Audio); err != nil {
			return nil, err
		}
		if in.Files, err = list("file", in.Files); err != nil {
			return nil, err
		}
		cp.Input = &in
	}
	for _, f := range []struct {
		kind string
		ms   *[]run.Media
	}{{"image", &cp.Images}, {"video", &cp.Videos}, {"audio", &cp.Audio}, {"file", &cp.Files}} {
		if *f.ms, err = list(f.kind, *f.ms); err != nil {
			return nil, err
		}
	}
	if cp.Messages, err = referenceParts(ctx, s, owner, out.Messages); err != nil {
		return nil, err
	}
	if cp.MemberResponses, err = referenceMembers(ctx, s, dbID, out.MemberResponses); err != nil {
		return nil, err
	}
	return &cp, nil
}

// referenceMembers references the media of a team run's member runs (and
// of theirs, for nested teams) as the run's own: a member response that
// holds no bytes is kept as stored.
func referenceMembers(ctx context.Context, s media.Storage, dbID string, members []json.RawMessage) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for i, raw := range members {
		var m run.Output
		if err := json.Unmarshal(raw, &m); err != nil {
			continue // not a run: kept as it is
		}
		ref, err := ReferenceMedia(ctx, s, dbID, &m)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(ref)
		if err != nil {
			return nil, err
		}
		if ref == &m || bytes.Equal(b, raw) {
			continue
		}
		if out == nil {
			out = slices.Clone(members)
		}
		out[i] = b
	}
	if out == nil {
		return members, nil
	}
	return out, nil
}

func referenceParts(ctx context.Context, s media.Storage, owner media.Owner, msgs []model.Message) ([]model.Message, error) {
	var out []model.Message
	for i := range msgs {
		if !slices.ContainsFunc(msgs[i].Parts, func(p model.Part) bool { return p.Data != nil }) {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		parts := slices.Clone(msgs[i].Parts)
		for j := range parts {
			if parts[j].Data == nil {
				continue
			}
			ref, err := media.Put(ctx, s, owner, string(parts[j].Type), parts[j].MIMEType, parts[j].Name, parts[j].Data)
			if err != nil {
				return nil, err
			}
			parts[j].MediaReference, _ = json.Marshal(ref)
			parts[j].Data = nil
		}
		out[i].Parts = parts
	}
	if out == nil {
		return msgs, nil
	}
	return out, nil
}

// WithoutMedia is what is stored when the media could not be offloaded: the
// run without any media bytes, references or member responses.
func WithoutMedia(out *run.Output) *run.Output {
	cp := *out
	strip := func(ms []run.Media) []run.Media {
		ms = slices.Clone(ms)
		for i := range ms {
			ms[i].Content = nil
		}
		return ms
	}
	if out.Input != nil {
		in := *out.Input
		in.Images, in.Videos, in.Audio, in.Files = strip(in.Images), strip(in.Videos), strip(in.Audio), strip(in.Files)
		cp.Input = &in
	}
	cp.Images, cp.Videos, cp.Audio, cp.Files = strip(cp.Images), strip(cp.Videos), strip(cp.Audio), strip(cp.Files)
	cp.MemberResponses = nil // they may hold bytes: the error says what happened
	cp.Messages = slices.Clone(out.Messages)
	for i := range cp.Messages {
		if len(cp.Messages[i].Parts) > 0 {
			parts := slices.Clone(cp.Messages[i].Parts)
			for j := range parts {
				parts[j].Data = nil
			}
			cp.Messages[i].Parts = parts
		}
	}
	return &cp
}

// needsMedia reports whether m has a part stored as a media reference whose
// bytes rehydrate reads back.
func needsMedia(m model.Message) bool {
	for i := range m.Parts {
		if m.Parts[i].Data == nil && len(m.Parts[i].MediaReference) > 0 {
			return true
		}
	}
	return false
}

// rehydrate puts the bytes of referenced parts back into history messages
// before a model call.
func (st *state) rehydrate(msgs []model.Message) ([]model.Message, error) {
	s := st.mediaStorage()
	var out []model.Message
	for i := range msgs {
		if !needsMedia(msgs[i]) {
			continue
		}
		if s == nil {
			return nil, fmt.Errorf("%w: the history holds media references but Config.MediaStorage is not set", ErrMedia)
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		parts := slices.Clone(msgs[i].Parts)
		for j := range parts {
			if parts[j].Data != nil || len(parts[j].MediaReference) == 0 {
				continue
			}
			var ref media.Reference
			if err := json.Unmarshal(parts[j].MediaReference, &ref); err != nil {
				return nil, fmt.Errorf("%w: a stored media_reference is unreadable: %w", ErrMedia, err)
			}
			if u := st.signedURL(s, &ref, parts[j].Type, parts[j].MIMEType); u != "" {
				parts[j].URL = u
				continue
			}
			b, err := media.Get(st.ctx, s, &ref)
			if err != nil {
				return nil, fmt.Errorf("%w: read %s back: %w", ErrMedia, ref.MediaID, err)
			}
			parts[j].Data = b
		}
		out[i].Parts = parts
	}
	if out == nil {
		return msgs, nil
	}
	return out, nil
}

// storedForm is the run as persisted: with Config.MediaStorage, media bytes
// become references. When that fails, the run is stored as ERROR with the
// message and no media (no reference to an object that may be missing), and
// the error is returned.
func (st *state) storedForm(ctx context.Context, out *run.Output) (*run.Output, error) {
	ms := st.mediaStorage()
	if ms == nil {
		return out, nil
	}
	var dbID string
	if d := st.a.conf().DB; d != nil {
		dbID = d.ID
	}
	stored, err := ReferenceMedia(ctx, ms, dbID, out)
	if err == nil {
		return stored, nil
	}
	err = fmt.Errorf("%w: %w", ErrMedia, err)
	st.err = err
	out.Status = run.StatusError
	out.Content, out.ContentType = err.Error(), "str"
	return WithoutMedia(out), err
}

// signedURL is a fresh signed URL for a reference when both the storage can
// sign and every model the call may reach (the model and its fallbacks)
// takes this kind of part by URL; "" otherwise: the bytes are sent.
func (st *state) signedURL(s media.Storage, ref *media.Reference, t model.PartType, mimeType string) string {
	if mimeType == "" {
		mimeType = ref.MimeType
	}
	if !st.takesURL(t, mimeType) {
		return ""
	}
	u, err := s.URL(st.ctx, ref.StorageKey, 0)
	if err != nil {
		return ""
	}
	return u
}
