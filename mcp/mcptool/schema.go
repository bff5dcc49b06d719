package mcptool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// checkSchema turns a server's input schema into the tool's parameters,
// refusing what could hurt the agent or the model provider: more than
// maxBytes, nesting deeper than MaxSchemaDepth, local $ref cycles (a
// recursive schema that inlining would expand forever), a root that is not
// an object schema. A root without a type is given "type":"object".
func checkSchema(schema any, maxBytes int) (json.RawMessage, error) {
	if schema == nil {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSchema, err)
	}
	if len(raw) > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d allowed", ErrBadSchema, len(raw), maxBytes)
	}
	if err := checkDepth(raw); err != nil {
		return nil, err
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("%w: the schema is not a JSON object", ErrBadSchema)
	}
	if t, ok := root["type"]; ok && t != "object" {
		return nil, fmt.Errorf("%w: type %v; a tool takes an object", ErrBadSchema, t)
	}
	if err := checkRefs(root); err != nil {
		return nil, err
	}
	if _, ok := root["type"]; !ok {
		// JSON Schema allows a root without a type; OpenAI refuses such
		// function parameters (and the whole request). raw is compact, from
		// json.Marshal: the member is spliced in, leaving numbers as sent.
		if len(root) == 0 {
			return json.RawMessage(`{"type":"object"}`), nil
		}
		return append(json.RawMessage(`{"type":"object",`), raw[1:]...), nil
	}
	return raw, nil
}

func checkDepth(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadSchema, err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			if depth > MaxSchemaDepth {
				return fmt.Errorf("%w: nested deeper than %d levels", ErrBadSchema, MaxSchemaDepth)
			}
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// checkRefs refuses remote references and cycles among local ones
// ("#", "#/$defs/x", "#/definitions/x").
func checkRefs(root map[string]any) error {
	edges := map[string][]string{} // pointer of a subschema -> refs inside it
	var walk func(v any, owner string) error
	walk = func(v any, owner string) error {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if !strings.HasPrefix(ref, "#") {
					return fmt.Errorf("%w: remote $ref %q; a tool schema must be self-contained", ErrBadSchema, ref)
				}
				edges[owner] = append(edges[owner], refTarget(ref))
			}
			for key, sub := range v {
				next := owner
				if key == "$defs" || key == "definitions" {
					if defs, ok := sub.(map[string]any); ok {
						for name, d := range defs {
							if err := walk(d, "#/"+key+"/"+name); err != nil {
								return err
							}
						}
						continue
					}
				}
				if err := walk(sub, next); err != nil {
					return err
				}
			}
		case []any:
			for _, sub := range v {
				if err := walk(sub, owner); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root, "#"); err != nil {
		return err
	}
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(n string) error
	visit = func(n string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("%w: recursive $ref through %s", ErrBadSchema, n)
		case 2:
			return nil
		}
		state[n] = 1
		for _, m := range edges[n] {
			if err := visit(m); err != nil {
				return err
			}
		}
		state[n] = 2
		return nil
	}
	for n := range edges {
		if err := visit(n); err != nil {
			return err
		}
	}
	return nil
}

// refTarget maps a local reference to the subschema node checkRefs tracks:
// a definition, or the root for any other pointer (conservative).
func refTarget(ref string) string {
	for _, p := range []string{"#/$defs/", "#/definitions/"} {
		if rest, ok := strings.CutPrefix(ref, p); ok {
			name, _, _ := strings.Cut(rest, "/")
			return p + name
		}
	}
	return "#"
}
