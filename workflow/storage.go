package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
)

// newOffloader builds Config.OffloadToolResults' offloader, refusing a
// configuration that cannot work.
func newOffloader(c *Config) (*offload.Offloader, error) {
	if c.OffloadToolResults == nil {
		return nil, nil
	}
	if c.DB == nil {
		return nil, errors.New("workflow: OffloadToolResults needs Config.DB (results are stored in its agno_fs and agno_tool_results tables)")
	}
	off, err := offload.New(c.DB, *c.OffloadToolResults)
	if err != nil {
		return nil, fmt.Errorf("workflow: OffloadToolResults: %w", err)
	}
	return off, nil
}

// storage sets the run's offloader and media storage: the workflow's own,
// else those its caller passed (a workflow that is a step of another).
func (x *exec) storage(o agent.CallOptions) {
	x.off, x.media = x.w.off, x.w.cfg.MediaStorage
	if x.off == nil {
		x.off = o.Offloader
	}
	if x.media == nil {
		x.media = o.MediaStorage
	}
}

// stepStorage gives a step's run the workflow's settings for what its own
// configuration leaves unset.
func (x *exec) stepStorage() agent.RunOption { return agent.WithStorageDefaults(x.off, x.media) }

// storedForm is the run as it is stored: with a media storage, its media
// bytes become references. When that fails the run ends ERROR with the
// error as its content, and is stored without its media.
func (x *exec) storedForm(ctx context.Context) (*run.Output, error) {
	if x.media == nil {
		return x.out, nil
	}
	var dbID string
	if x.w.cfg.DB != nil {
		dbID = x.w.cfg.DB.ID
	}
	stored, err := agent.ReferenceMedia(ctx, x.media, dbID, x.out)
	if err == nil {
		return stored, nil
	}
	err = fmt.Errorf("%w: %w", agent.ErrMedia, err)
	x.out.Status = run.StatusError
	x.out.Content, x.out.ContentType = err.Error(), "str"
	return agent.WithoutMedia(x.out), err
}
