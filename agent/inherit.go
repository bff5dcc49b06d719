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
	return func(o *runOptions) { o.offloader, o.mediaStorage = off, s }
}

// inheritStorage sets the run's offloader and media storage: the agent's
// own, else those its caller passed with WithStorageDefaults. A run that
// takes an offloader this way gets the offload tools too (unless a tool of
// the agent already has one of their names: it then offloads nothing).
func (st *state) inheritStorage() error {
	st.off, st.media = st.a.off, st.a.conf().MediaStorage
	if st.media == nil {
		st.media = st.opts.mediaStorage
	}
	if st.off != nil || st.opts.offloader == nil {
		return nil
	}
	for _, t := range st.tix.tools {
		if n := t.Definition().Name; n == offload.ReadToolName || n == offload.SearchToolName {
			return nil
		}
	}
	st.off = st.opts.offloader
	tix, err := newToolIndex(append(slices.Clip(st.tix.tools), st.off.Tools()...))
	if err != nil {
		return err
	}
	st.tix, st.exec = tix, st.a.toolHandler(tix.set)
	return nil
}
