package run

import "maps"

// MergeMetadata returns base with over merged into it, recursively where
// both hold an object under a key (Agno's merge_dictionaries), over's value
// winning a conflict; nil when both are empty. Neither map is modified: the
// objects merged are new maps, the other values shared.
//
// A component resolves a run's metadata with it, its own metadata over the
// call's (an agent's Config.Metadata, a team's; docs/adr/run-metadata-precedence.md).
func MergeMetadata(base, over map[string]any) map[string]any {
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
				out[k] = MergeMetadata(bm, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
