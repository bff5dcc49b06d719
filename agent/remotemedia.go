package agent

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentryhq/agentry/model"
)

// ErrRemoteMedia: media given by URL could not be fetched for a model that
// needs its bytes (refused by Config.RemoteMedia, unreachable, not found
// or too large); the run ends in ERROR.
var ErrRemoteMedia = errors.New("agent: remote media could not be fetched")

// MaxRemoteMediaBytes caps one fetched media object.
const MaxRemoteMediaBytes = 20 << 20

const remoteMediaTimeout = 30 * time.Second

// takesURL reports whether the model and every fallback model take this
// kind of part by URL.
func (st *state) takesURL(t model.PartType, mimeType string) bool {
	if !model.AcceptsURL(st.p.model, t, mimeType) {
		return false
	}
	if fb := st.p.fallback; fb != nil {
		for _, list := range [][]model.Model{fb.OnError, fb.OnRateLimit, fb.OnContextOverflow} {
			for _, m := range list {
				if !model.AcceptsURL(m, t, mimeType) {
					return false
				}
			}
		}
	}
	return true
}

// withRemoteBytes returns msgs with the bytes of http(s) media parts the
// models do not take by URL, fetched once per run through the SSRF guard.
// msgs itself is not changed: the stored run keeps the URL.
func (st *state) withRemoteBytes(msgs []model.Message) ([]model.Message, error) {
	needs := func(p model.Part) bool {
		return p.Type != model.PartText && p.Data == nil && isHTTP(p.URL) && !st.takesURL(p.Type, p.MIMEType)
	}
	var out []model.Message
	for i := range msgs {
		if !slices.ContainsFunc(msgs[i].Parts, needs) {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		parts := slices.Clone(msgs[i].Parts)
		for j := range parts {
			if !needs(parts[j]) {
				continue
			}
			b, mime, err := st.fetchRemote(parts[j].URL)
			if err != nil {
				return nil, err
			}
			parts[j].Data, parts[j].URL = b, ""
			if parts[j].MIMEType == "" {
				parts[j].MIMEType = mime
			}
		}
		out[i].Parts = parts
	}
	if out == nil {
		return msgs, nil
	}
	return out, nil
}

func isHTTP(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}

type remoteObject struct {
	data []byte
	mime string
}

// fetchRemote reads one URL (cached for the run's later model calls).
func (st *state) fetchRemote(raw string) ([]byte, string, error) {
	if st.ext != nil {
		if o, ok := st.ext.remote[raw]; ok {
			return o.data, o.mime, nil
		}
	}
	fail := func(err error) ([]byte, string, error) {
		return nil, "", fmt.Errorf("%w: %s: %w", ErrRemoteMedia, redactURL(raw), err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fail(err)
	}
	g := st.a.remoteGuard()
	if err := g.CheckURL(u); err != nil {
		return fail(err)
	}
	req, err := http.NewRequestWithContext(st.ctx, http.MethodGet, raw, nil)
	if err != nil {
		return fail(err)
	}
	resp, err := g.Client(remoteMediaTimeout).Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fail(fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxRemoteMediaBytes+1))
	if err != nil {
		return fail(err)
	}
	if len(b) > MaxRemoteMediaBytes {
		return fail(fmt.Errorf("larger than %d bytes", MaxRemoteMediaBytes))
	}
	x := st.extras()
	if x.remote == nil {
		x.remote = map[string]remoteObject{}
	}
	mime := resp.Header.Get("Content-Type")
	x.remote[raw] = remoteObject{b, mime}
	return b, mime, nil
}

// redactURL drops a URL's query (it may hold a signature) from messages.
func redactURL(raw string) string {
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		return raw[:i] + "?…"
	}
	return raw
}
