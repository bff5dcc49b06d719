package tool

import (
	"fmt"
	"slices"
)

// Toolkit groups related tools under a name. Include, when not empty, keeps
// only the named tools; Exclude then drops the named tools. Naming a tool the
// toolkit does not have is an error, so a typo does not silently change what
// the model can call.
type Toolkit struct {
	Name    string
	Tools   []Tool
	Include []string
	Exclude []string
}

// Selected returns the toolkit's tools after Include and Exclude.
func (k Toolkit) Selected() ([]Tool, error) {
	have := make(map[string]bool, len(k.Tools))
	for i, t := range k.Tools {
		if t == nil {
			return nil, fmt.Errorf("toolkit %s: nil tool at position %d", k.Name, i)
		}
		have[t.Definition().Name] = true
	}
	for _, list := range [][]string{k.Include, k.Exclude} {
		for _, n := range list {
			if !have[n] {
				return nil, fmt.Errorf("toolkit %s has no tool %q", k.Name, n)
			}
		}
	}
	out := make([]Tool, 0, len(k.Tools))
	for _, t := range k.Tools {
		n := t.Definition().Name
		if len(k.Include) > 0 && !slices.Contains(k.Include, n) {
			continue
		}
		if slices.Contains(k.Exclude, n) {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}
