package agent

import "github.com/agentryhq/agentry/run"

// runMetadata is a run's metadata as Agno resolves it: the call's
// (WithMetadata) with the agent's Config.Metadata merged over it
// (run.MergeMetadata), the agent's value winning a conflict (nil when both
// are empty).
func (a *Agent) runMetadata(given map[string]any) map[string]any {
	return run.MergeMetadata(given, a.conf().Metadata)
}
