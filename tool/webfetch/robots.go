package webfetch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/temoto/robotstxt"
)

// robotsCache keeps each site's parsed robots.txt for an hour, so a run that
// reads many pages of one site asks for it once.
type robotsCache struct {
	mu      sync.Mutex
	entries map[string]robotsEntry
}

type robotsEntry struct {
	data    *robotstxt.RobotsData
	fetched time.Time
}

const (
	robotsTTL        = time.Hour
	robotsMaxEntries = 512
	robotsMaxBytes   = 512 << 10
)

func newRobotsCache() *robotsCache { return &robotsCache{entries: map[string]robotsEntry{}} }

// allow reports nil when u may be fetched by agent.
func (c *robotsCache) allow(ctx context.Context, client *http.Client, u *url.URL, agent string) error {
	site := u.Scheme + "://" + u.Host
	c.mu.Lock()
	e, ok := c.entries[site]
	c.mu.Unlock()
	if !ok || time.Since(e.fetched) > robotsTTL {
		data, err := fetchRobots(ctx, client, site, agent)
		if err != nil {
			return err
		}
		e = robotsEntry{data: data, fetched: time.Now()}
		c.mu.Lock()
		if len(c.entries) >= robotsMaxEntries {
			clear(c.entries)
		}
		c.entries[site] = e
		c.mu.Unlock()
	}
	path := u.EscapedPath()
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	if !e.data.TestAgent(path, agent) {
		return fmt.Errorf("%w: %s/robots.txt does not allow %s to fetch %s; respect it and use another source", ErrDisallowedByRobots, site, agent, path)
	}
	return nil
}

// fetchRobots reads a site's robots.txt; by the standard's rules a missing
// file allows everything and a server error disallows everything.
func fetchRobots(ctx context.Context, client *http.Client, site, agent string) (*robotstxt.RobotsData, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, site+"/robots.txt", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", agent)
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s/robots.txt: %w", site, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, robotsMaxBytes))
	if err != nil {
		return nil, fmt.Errorf("reading %s/robots.txt: %w", site, err)
	}
	data, err := robotstxt.FromStatusAndBytes(resp.StatusCode, body)
	if err != nil {
		return nil, fmt.Errorf("%s/robots.txt does not parse: %w", site, err)
	}
	return data, nil
}
