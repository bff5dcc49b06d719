package agent

import "maps"

// runMetadata is a run's metadata as Agno resolves it: the call's
// (WithMetadata) with the agent's Config.Metadata merged over it, the
// agent's value winning a conflict (nil when both are empty).
func (a *Agent) runMetadata(given map[string]any) map[string]any {
	return mergeMetadata(given, a.conf().Metadata)
}

// mergeMetadata returns base with over merged into it, recursively where
// both hold an object under a key (Agno's merge_dictionaries), over's value
// winning a conflict; nil when both are empty. Neither map is modified: the
// objects merged are new maps, the other values shared.
func mergeMetadata(base, over map[string]any) map[string]any {
	switch {
	case len(base) == 0 && len(over) == 0:
		return nil
	case len(over) == 0:
		return maps.Clone(base)
	}
	out := make(map[string]any, len(base)+len(over))
	maps.Copy(out, base)
	for k, v := range over {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = mergeMetadata(bm, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
