package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// checkKeys walks the YAML node n against t, the Go type it decodes into, and
// reports every key t does not have and every value of the wrong kind, in the
// file's own words: YAML paths (agents[0].model), line numbers, and a "did you
// mean" for a misspelt key. yaml.v3's own errors name Go types
// ("field modle not found in type config.Agent"), which a user cannot act on.
func checkKeys(n *yaml.Node, t reflect.Type, file, path string) []error {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return checkKeys(n.Content[0], t, file, path)
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	bad := func(line int, format string, args ...any) []error {
		msg := fmt.Sprintf(format, args...)
		if path != "" {
			msg = path + ": " + msg
		}
		return []error{&Error{File: file, Line: line, Msg: msg}}
	}
	// Types with their own YAML reader (sizes, string-or-list, tools, keys)
	// word their own errors; only the line prefix is reformatted.
	if reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			msg := strings.TrimPrefix(err.Error(), "yaml: ")
			line := n.Line
			if sub := linePrefix.FindStringSubmatch(msg); sub != nil {
				line, _ = strconv.Atoi(sub[1])
				msg = msg[len(sub[0]):]
			}
			return bad(line, "%s", msg)
		}
		return nil
	}
	if t == reflect.TypeFor[time.Duration]() {
		if n.Kind != yaml.ScalarNode || n.Decode(new(time.Duration)) != nil {
			return bad(n.Line, "%q is not a duration: write e.g. 10s, 500ms or 2m", n.Value)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkKeys(n, t.Elem(), file, path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return bad(n.Line, "expected a mapping of keys (%s)", strings.Join(yamlKeys(t), ", "))
		}
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			if key.Value == "<<" { // a YAML merge key; its mapping is checked where it is defined
				continue
			}
			f, ok := fieldByKey(t, key.Value)
			if !ok {
				errs = append(errs, &Error{File: file, Line: key.Line, Msg: unknownKey(path, key.Value, yamlKeys(t))})
				continue
			}
			errs = append(errs, checkKeys(val, f.Type, file, joinPath(path, key.Value))...)
		}
		return errs
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return bad(n.Line, "expected a list (- item per line, or [a, b])")
		}
		var errs []error
		for i, c := range n.Content {
			errs = append(errs, checkKeys(c, t.Elem(), file, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	case reflect.Map:
		// Free-form maps (metadata, options) hold user data, not settings.
		if n.Kind != yaml.MappingNode {
			return bad(n.Line, "expected a mapping of keys to values")
		}
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.Decode(reflect.New(t).Interface()) != nil {
		got := n.Value
		if n.Kind != yaml.ScalarNode {
			got = "a " + map[yaml.Kind]string{yaml.MappingNode: "mapping", yaml.SequenceNode: "list"}[n.Kind]
		} else {
			got = strconv.Quote(got)
		}
		return bad(n.Line, "%s is not %s", got, kindWords(t))
	}
	return nil
}

// kindWords says in YAML terms what a scalar of Go type t must be.
func kindWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a string"
}

// yamlKeys lists the keys a struct accepts, in declaration order.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if k := yamlKey(f); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if yamlKey(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlKey is the key a field is read from, as yaml.v3 decides it ("" when the
// field is not read at all).
func yamlKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	switch tag {
	case "-":
		return ""
	case "":
		return strings.ToLower(f.Name)
	}
	return tag
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// unknownKey words an unknown key: the 2.x name it replaces, else the nearest
// valid key, else the list of valid keys.
func unknownKey(path, key string, valid []string) string {
	where := "at the top level"
	if path != "" {
		where = "in " + path
	}
	if s, ok := nearest(key, valid); ok {
		return fmt.Sprintf("unknown key %q %s: did you mean %q?", key, where, s)
	}
	return fmt.Sprintf("unknown key %q %s (valid keys: %s)", key, where, strings.Join(valid, ", "))
}

// nearest returns the candidate closest to s by edit distance, if it is close
// enough to be a plausible typo: at most one edit per three letters, and at
// least one.
func nearest(s string, candidates []string) (string, bool) {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(1, len(s)/3)
	return best, bestD >= 0 && bestD <= limit
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two adjacent letters
// ("modle" is one edit from "model") each count one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// isAgentFile reports whether a document's top-level mapping is one agent
// (the shape of an agents: entry) rather than a whole configuration: it has no
// key of the whole file only, and its keys are an agent's (or, for a key
// that is neither, nearer to an agent's). Keys of both (offload_tool_results,
// media_storage, knowledge) decide nothing.
func isAgentFile(root *yaml.Node) bool {
	if root.Kind != yaml.MappingNode {
		return false
	}
	top, agent := yamlKeys(reflect.TypeFor[Config]()), yamlKeys(reflect.TypeFor[Agent]())
	agentish := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i].Value
		inTop, inAgent := slices.Contains(top, k), slices.Contains(agent, k)
		switch {
		case inTop && inAgent:
			// offload_tool_results, media_storage, knowledge: both shapes
			// have them, so they decide nothing.
		case inTop:
			return false
		case inAgent:
			agentish = true
		default:
			if _, ok := nearest(k, agent); ok {
				if _, alsoTop := nearest(k, top); !alsoTop {
					agentish = true
				}
			}
		}
	}
	return agentish
}
