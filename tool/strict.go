package tool

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrNotStrict is wrapped by StrictSchema's error for a schema with a part
// that strict structured output cannot describe.
var ErrNotStrict = errors.New("strict mode cannot describe it")

// StrictSchema rewrites a schema (an inferred parameter schema, an agent's
// output schema) into the form providers enforcing it accept (OpenAI's
// strict function calling and structured outputs): every
// object lists all its properties as required and refuses others, and a
// property that was optional also takes null, which encoding/json decodes
// as the field's zero value. sent is what the model is given; checked is
// the same schema with the original required lists, which validates the
// arguments or the answer (a provider that does not enforce the schema may
// still leave optional properties out). A map or a field taking any JSON
// value has no strict form: that is an error naming it, wrapping
// ErrNotStrict.
func StrictSchema(params json.RawMessage) (sent, checked json.RawMessage, err error) {
	var forSent, forChecked map[string]any
	if err := json.Unmarshal(params, &forSent); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(params, &forChecked); err != nil {
		return nil, nil, err
	}
	if err := strictify(forSent, "", true); err != nil {
		return nil, nil, err
	}
	if err := strictify(forChecked, "", false); err != nil {
		return nil, nil, err
	}
	if sent, err = json.Marshal(forSent); err != nil {
		return nil, nil, err
	}
	if checked, err = json.Marshal(forChecked); err != nil {
		return nil, nil, err
	}
	return sent, checked, nil
}

// unsupported are the keywords strict mode refuses (OpenAI's structured
// outputs take anyOf as their only composition). Making the objects under
// them strict would change what they mean, too: two allOf branches each
// refusing the other's properties accept nothing.
var unsupported = []string{"allOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependentRequired",
	"dependencies", "patternProperties", "prefixItems", "unevaluatedProperties", "unevaluatedItems"}

// strictify rewrites schema s (at JSON pointer path) in place.
func strictify(s map[string]any, path string, allRequired bool) error {
	where := cmp.Or(path, "the schema's root")
	if len(s) == 0 || onlyAnnotations(s) {
		return fmt.Errorf("%s takes any JSON value: %w", where, ErrNotStrict)
	}
	for _, k := range unsupported {
		if _, ok := s[k]; ok {
			return fmt.Errorf("%s uses %s, which strict mode does not take: %w", where, k, ErrNotStrict)
		}
	}
	if _, ok := s["items"].([]any); ok { // draft 7's prefixItems
		return fmt.Errorf("%s uses items as a list (a tuple), which strict mode does not take: %w", where, ErrNotStrict)
	}
	if _, ok := s["anyOf"]; ok && path == "" {
		return fmt.Errorf("the schema's root is an anyOf; strict mode wants an object there: %w", ErrNotStrict)
	}
	for _, key := range []string{"$defs", "definitions"} { // 2020-12's and draft 7's
		defs, _ := s[key].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(defs)) {
			if d, ok := defs[name].(map[string]any); ok {
				if err := strictify(d, path+"/"+key+"/"+name, allRequired); err != nil {
					return err
				}
			}
		}
	}
	if branches, ok := s["anyOf"].([]any); ok {
		for i, b := range branches {
			if bs, ok := b.(map[string]any); ok {
				if err := strictify(bs, fmt.Sprintf("%s/anyOf/%d", path, i), allRequired); err != nil {
					return err
				}
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		if err := strictify(items, path+"/items", allRequired); err != nil {
			return err
		}
	}
	if !hasType(s, "object") {
		return nil
	}
	props, _ := s["properties"].(map[string]any)
	if ap, ok := s["additionalProperties"]; ok && ap != false || props == nil && s["additionalProperties"] == nil {
		return fmt.Errorf("%s is a map (an object with free property names): %w", where, ErrNotStrict)
	}
	s["additionalProperties"] = false
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	names := slices.Sorted(maps.Keys(props))
	for _, name := range names {
		p, ok := props[name].(map[string]any)
		if props[name] == true {
			return fmt.Errorf("%s/properties/%s takes any JSON value: %w", path, name, ErrNotStrict)
		}
		if !ok {
			return fmt.Errorf("%s/properties/%s is not a schema object: %w", path, name, ErrNotStrict)
		}
		if err := strictify(p, path+"/properties/"+name, allRequired); err != nil {
			return err
		}
		if !required[name] {
			props[name] = nullable(p)
		}
	}
	if allRequired {
		all := make([]any, len(names))
		for i, n := range names {
			all[i] = n
		}
		s["required"] = all
	}
	return nil
}

// nullable returns s also accepting null.
func nullable(s map[string]any) map[string]any {
	switch t := s["type"].(type) {
	case string:
		if t != "null" {
			s["type"] = []any{t, "null"}
		}
		addNullEnum(s)
		return s
	case []any:
		if !slices.Contains(t, any("null")) {
			s["type"] = append(t, "null")
		}
		addNullEnum(s)
		return s
	}
	if branches, ok := s["anyOf"].([]any); ok {
		for _, b := range branches {
			if bs, ok := b.(map[string]any); ok && bs["type"] == "null" {
				return s
			}
		}
		s["anyOf"] = append(branches, map[string]any{"type": "null"})
		return s
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// addNullEnum lets an enum take null too (an enum binds on its own).
func addNullEnum(s map[string]any) {
	if e, ok := s["enum"].([]any); ok && !slices.Contains(e, nil) {
		s["enum"] = append(e, nil)
	}
}

func hasType(s map[string]any, want string) bool {
	switch t := s["type"].(type) {
	case string:
		return t == want
	case []any:
		return slices.Contains(t, any(want))
	}
	return false
}

// onlyAnnotations: s constrains nothing (a description, a title).
func onlyAnnotations(s map[string]any) bool {
	for k := range s {
		if !strings.HasPrefix(k, "$comment") && k != "description" && k != "title" && k != "default" && k != "examples" {
			return false
		}
	}
	return true
}
