package agent

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentryhq/agentry/model"
)

// DefaultDelayBetweenRetries is Config.DelayBetweenRetries's default.
const DefaultDelayBetweenRetries = time.Second

// NoDelayBetweenRetries is the Config.DelayBetweenRetries that retries at
// once (Agno's delay_between_retries=0; zero takes the default).
const NoDelayBetweenRetries time.Duration = -1

// checkControls validates the hooks and controls of c, fills their defaults
// and compiles what can be compiled once (the input schema, the time zone);
// New calls it.
func checkControls(c *Config) (*inputSchema, *time.Location, error) {
	for i, h := range c.PreHooks {
		if h == nil {
			return nil, nil, fmt.Errorf("agent: PreHooks[%d] is nil", i)
		}
	}
	for i, h := range c.PostHooks {
		if h == nil {
			return nil, nil, fmt.Errorf("agent: PostHooks[%d] is nil", i)
		}
	}
	for i, h := range c.ToolHooks {
		if h == nil {
			return nil, nil, fmt.Errorf("agent: ToolHooks[%d] is nil", i)
		}
	}
	var (
		in  *inputSchema
		loc *time.Location
		err error
	)
	if len(c.InputSchema) > 0 {
		if in, err = compileInputSchema(c.InputSchema); err != nil {
			return nil, nil, err
		}
	}
	if c.Timezone != "" {
		if loc, err = time.LoadLocation(c.Timezone); err != nil {
			return nil, nil, fmt.Errorf("agent: Timezone %q is not an IANA time zone (e.g. Europe/Paris): %w", c.Timezone, err)
		}
	}
	if c.AddLocationToContext && c.Location == "" {
		return nil, nil, errors.New("agent: AddLocationToContext needs Location (e.g. \"Paris, France\"); Agentry does not look it up over the network")
	}
	if c.AddNameToContext && c.Name == "" {
		return nil, nil, errors.New("agent: AddNameToContext needs Name")
	}
	switch {
	case c.Retries < 0:
		return nil, nil, fmt.Errorf("agent: Retries must be >= 0, got %d", c.Retries)
	case c.DelayBetweenRetries < 0 && c.DelayBetweenRetries != NoDelayBetweenRetries:
		return nil, nil, fmt.Errorf("agent: DelayBetweenRetries must be >= 0 (or NoDelayBetweenRetries), got %s", c.DelayBetweenRetries)
	case c.CacheTTL < 0:
		return nil, nil, fmt.Errorf("agent: CacheTTL must be >= 0, got %s", c.CacheTTL)
	}
	if c.Retries > 0 && c.DelayBetweenRetries == 0 {
		c.DelayBetweenRetries = DefaultDelayBetweenRetries
	}
	if c.DebugMode && c.DebugWriter == nil {
		c.DebugWriter = os.Stderr
	}
	return in, loc, nil
}

// prepareControls fills p's controls on the first run.
func (a *Agent) prepareControls(p *prepared) {
	c := a.conf()
	p.inputSchema, p.timezone = a.inputSchema, a.timezone
	p.parserModel, p.outputModel = c.ParserModel, c.OutputModel
	if c.ModelRetry != nil {
		for _, m := range []*model.Model{&p.parserModel, &p.outputModel} {
			if *m != nil {
				*m = model.WithRetry(*m, *c.ModelRetry)
			}
		}
	}
	if c.Retries > 0 {
		for _, m := range []*model.Model{&p.model, &p.parserModel, &p.outputModel} {
			if *m != nil {
				*m = withRunRetry(*m, c.Retries, max(c.DelayBetweenRetries, 0), c.ExponentialBackoff)
			}
		}
	}
	p.exec = a.toolHandler(p.set)
	p.runContext = len(p.tools) > 0 || len(c.PreHooks) > 0 || len(c.PostHooks) > 0
}
