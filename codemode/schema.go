package codemode

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// schemaNode is the part of a JSON Schema the description shows.
type schemaNode struct {
	Type       any                    `json:"type"`
	Properties map[string]*schemaNode `json:"properties"`
	Required   []string               `json:"required"`
	Items      *schemaNode            `json:"items"`
	Enum       []any                  `json:"enum"`
}

// compactSchema renders a tool's parameters for the execute description,
// e.g. {city: string, days?: 1|3|7}.
func compactSchema(params json.RawMessage) string {
	var n schemaNode
	if len(params) == 0 || json.Unmarshal(params, &n) != nil {
		return "{}"
	}
	return n.render(0)
}

func (n *schemaNode) render(depth int) string {
	if n == nil {
		return "any"
	}
	if len(n.Enum) > 0 {
		parts := make([]string, len(n.Enum))
		for i, v := range n.Enum {
			b, _ := json.Marshal(v)
			parts[i] = string(b)
		}
		return strings.Join(parts, "|")
	}
	typ := ""
	switch t := n.Type.(type) {
	case string:
		typ = t
	case []any:
		var ts []string
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" {
				ts = append(ts, s)
			}
		}
		typ = strings.Join(ts, "|")
	}
	switch {
	case typ == "object" || n.Properties != nil:
		if len(n.Properties) == 0 {
			return "{}"
		}
		if depth > 2 {
			return "{...}"
		}
		keys := make([]string, 0, len(n.Properties))
		for k := range n.Properties {
			keys = append(keys, k)
		}
		// Required first, then alphabetical.
		slices.SortFunc(keys, func(a, b string) int {
			ra, rb := slices.Contains(n.Required, a), slices.Contains(n.Required, b)
			if ra != rb {
				if ra {
					return -1
				}
				return 1
			}
			return strings.Compare(a, b)
		})
		parts := make([]string, len(keys))
		for i, k := range keys {
			opt := "?"
			if slices.Contains(n.Required, k) {
				opt = ""
			}
			parts[i] = fmt.Sprintf("%s%s: %s", k, opt, n.Properties[k].render(depth+1))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case typ == "array":
		return n.Items.render(depth+1) + "[]"
	case typ == "":
		return "any"
	}
	return typ
}
