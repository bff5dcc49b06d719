package agent

import (
	"slices"

	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/offload"
)

// WithStorageDefaults gives a run the offloader and media storage of the
// team or workflow running it, for what the agent's own Config leaves
// unset (OffloadToolResults, MediaStorage): its oversized tool results are
// offloaded and its media stored as references before its run is stored,
// as the caller's own would be. Nil arguments change nothing.
func WithStorageDefaults(off *offload.Offloader, s media.Storage) RunOption {
	return func(o *runOptions) { m := o.set(); m.offloader, m.mediaStorage = off, s }
}

// inheritStorage sets the run's offloader and media storage: the agent's
// own, else those its caller passed with WithStorageDefaults. A run that
// takes an offloader this way gets the offload tools too (unless a tool of
// the agent already has one of their names: it then offloads nothing).
func (st *state) inheritStorage() error {
	off, ms := st.a.off, st.a.conf().MediaStorage
	var more moreOptions
	if st.opts.more != nil {
		more = *st.opts.more
	}
	if ms == nil {
		ms = more.mediaStorage
	}
	if off != nil || ms != nil {
		x := st.extras()
		x.off, x.media = off, ms
	}
	if off != nil || more.offloader == nil {
		return nil
	}
	for _, t := range st.tix.tools {
		if n := t.Definition().Name; n == offload.ReadToolName || n == offload.SearchToolName {
			return nil
		}
	}
	off = more.offloader
	st.extras().off = off
	tix, err := newToolIndex(append(slices.Clip(st.tix.tools), off.Tools()...))
	if err != nil {
		return err
	}
	st.tix, st.exec = tix, st.a.toolHandler(tix.set)
	return nil
}
