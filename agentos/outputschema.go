package agentos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// checkOutputSchema rejects an output_schema that is not a usable JSON Schema
// before anything runs (the agent would otherwise fail the run), and one
// whose validation would not end (checkSchemaApplicators).
func checkOutputSchema(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var sch jsonschema.Schema
	if err := json.Unmarshal(raw, &sch); err != nil {
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: "output_schema is not a JSON Schema: " + strings.TrimPrefix(err.Error(), "json: "), Err: err}
	}
	if _, err := sch.Resolve(nil); err != nil {
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: "output_schema is not a usable JSON Schema: " + err.Error(), Err: err}
	}
	if err := checkSchemaApplicators(raw); err != nil {
		return &httpError{Status: http.StatusUnprocessableEntity, Detail: "output_schema is not a usable JSON Schema: " + err.Error(), Err: err}
	}
	return nil
}

// maxInPlaceApplications bounds how many times one value of the answer may
// be validated against the schema's subschemas (allOf, anyOf, oneOf, $ref,
// …, each counted once per way of reaching it).
const maxInPlaceApplications = 10_000

// checkSchemaApplicators refuses a resolved schema whose validation would
// not end. jsonschema-go validates a value by recursing through the
// keywords that apply subschemas to that same value ($ref, $dynamicRef,
// allOf, anyOf, oneOf, not, if/then/else, dependentSchemas) without
// memoizing, so a $ref leading back to itself through them
// ({"$ref":"#"}) recurses until the goroutine's stack overflows, which
// kills the whole process, and a chain of them doubling at each step
// ({"allOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}]}, and so on down)
// validates for ever, the run's cancellation unheard. Keywords that apply
// to a part of the value (properties, items, …) are not counted: the
// answer's own size bounds them.
func checkSchemaApplicators(raw json.RawMessage) error {
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return err
	}
	g := schemaGraph{nodes: map[string]map[string]any{}, bases: map[string]*url.URL{},
		resources: map[string]string{}, anchors: map[string]string{}, dynamic: map[string][]string{}}
	base, _ := url.Parse("https://output-schema.agentry.invalid/schema.json")
	g.resources[base.String()] = ""
	g.walk(root, "", base)
	// Post-order over the in-place edges: a node on the path being explored
	// again is a cycle; a finished node's count of applications is kept.
	const (
		exploring = -1
	)
	count := map[string]int{}
	type frame struct {
		ptr   string
		edges []string
		next  int
		sum   int
	}
	for start := range g.nodes {
		if _, done := count[start]; done {
			continue
		}
		stack := []*frame{{ptr: start, edges: g.inPlace(start), sum: 1}}
		count[start] = exploring
		for len(stack) > 0 {
			f := stack[len(stack)-1]
			if f.next < len(f.edges) {
				to := f.edges[f.next]
				f.next++
				switch c, seen := count[to]; {
				case !seen:
					count[to] = exploring
					stack = append(stack, &frame{ptr: to, edges: g.inPlace(to), sum: 1})
				case c == exploring:
					return fmt.Errorf("the subschema at %q applies itself to the same value (through $ref, allOf, anyOf, oneOf, …) without end", "#"+to)
				default:
					f.sum += c
				}
				if f.sum > maxInPlaceApplications {
					return fmt.Errorf("the subschema at %q applies more than %d subschemas to one value (through $ref, allOf, anyOf, oneOf, …)", "#"+f.ptr, maxInPlaceApplications)
				}
				continue
			}
			count[f.ptr] = f.sum
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.sum += f.sum
				if p.sum > maxInPlaceApplications {
					return fmt.Errorf("the subschema at %q applies more than %d subschemas to one value (through $ref, allOf, anyOf, oneOf, …)", "#"+p.ptr, maxInPlaceApplications)
				}
			}
		}
	}
	return nil
}

// schemaGraph is a schema's subschemas by JSON pointer, with what its
// references resolve to.
type schemaGraph struct {
	nodes map[string]map[string]any
	// bases is each subschema's base URI.
	bases map[string]*url.URL
	// resources are the subschemas with an $id, by URI; anchors those with
	// an $anchor or $dynamicAnchor (or a draft-7 "#name" $id), by URI#name.
	resources, anchors map[string]string
	// dynamic are the subschemas with a $dynamicAnchor, by its name.
	dynamic map[string][]string
}

// Subschema keywords: those applying to the same value (inPlace*) and the
// others, walked to find every subschema.
var (
	inPlaceOne  = []string{"not", "if", "then", "else"}
	inPlaceList = []string{"allOf", "anyOf", "oneOf"}
	inPlaceMap  = []string{"dependentSchemas", "dependencies"}
	partOne     = []string{"items", "additionalItems", "additionalProperties", "contains", "propertyNames",
		"unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	partList = []string{"prefixItems", "items"}
	partMap  = []string{"properties", "patternProperties", "$defs", "definitions"}
)

func pointerJoin(ptr, key string) string {
	return ptr + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

func (g *schemaGraph) walk(v any, ptr string, base *url.URL) {
	obj, ok := v.(map[string]any)
	if !ok {
		return // true, false, or not a schema
	}
	if id, ok := obj["$id"].(string); ok {
		if u, err := url.Parse(id); err == nil {
			nb := base.ResolveReference(u)
			if frag := nb.Fragment; frag != "" && !strings.HasPrefix(frag, "/") {
				// Draft 7: "$id": "#name" is an anchor.
				nb.Fragment = ""
				g.anchors[nb.String()+"#"+frag] = ptr
			} else {
				nb.Fragment, nb.RawFragment = "", ""
				base = nb
				g.resources[base.String()] = ptr
			}
		}
	}
	g.nodes[ptr], g.bases[ptr] = obj, base
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		if a, ok := obj[k].(string); ok {
			g.anchors[base.String()+"#"+a] = ptr
			if k == "$dynamicAnchor" {
				g.dynamic[a] = append(g.dynamic[a], ptr)
			}
		}
	}
	for _, k := range append(append([]string{}, inPlaceOne...), partOne...) {
		g.walk(obj[k], pointerJoin(ptr, k), base)
	}
	for _, k := range append(append([]string{}, inPlaceList...), partList...) {
		if list, ok := obj[k].([]any); ok {
			for i, s := range list {
				g.walk(s, pointerJoin(ptr, k)+"/"+strconv.Itoa(i), base)
			}
		}
	}
	for _, k := range append(append([]string{}, inPlaceMap...), partMap...) {
		if m, ok := obj[k].(map[string]any); ok {
			for name, s := range m {
				g.walk(s, pointerJoin(pointerJoin(ptr, k), name), base)
			}
		}
	}
}

// inPlace lists the subschemas ptr applies to the value it validates.
func (g *schemaGraph) inPlace(ptr string) []string {
	obj := g.nodes[ptr]
	var out []string
	add := func(p string) {
		if _, ok := g.nodes[p]; ok {
			out = append(out, p)
		}
	}
	for _, k := range inPlaceOne {
		add(pointerJoin(ptr, k))
	}
	for _, k := range inPlaceList {
		if list, ok := obj[k].([]any); ok {
			for i := range list {
				add(pointerJoin(ptr, k) + "/" + strconv.Itoa(i))
			}
		}
	}
	for _, k := range inPlaceMap {
		if m, ok := obj[k].(map[string]any); ok {
			for name := range m {
				add(pointerJoin(pointerJoin(ptr, k), name))
			}
		}
	}
	if ref, ok := obj["$ref"].(string); ok {
		if to, ok := g.resolve(ptr, ref); ok {
			out = append(out, to)
		}
	}
	if ref, ok := obj["$dynamicRef"].(string); ok {
		if to, ok := g.resolve(ptr, ref); ok {
			out = append(out, to)
		}
		// Resolved at validation time against the dynamic scope: any
		// subschema with that $dynamicAnchor may be the one.
		if _, name, ok := strings.Cut(ref, "#"); ok {
			out = append(out, g.dynamic[name]...)
		}
	}
	return out
}

// resolve finds the subschema a reference from ptr names; false for one
// outside the schema (a meta-schema jsonschema-go knows).
func (g *schemaGraph) resolve(ptr, ref string) (string, bool) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", false
	}
	target := g.bases[ptr].ResolveReference(u)
	frag := target.Fragment
	target.Fragment, target.RawFragment = "", ""
	doc, ok := g.resources[target.String()]
	if !ok {
		return "", false
	}
	var to string
	switch {
	case frag == "":
		to = doc
	case strings.HasPrefix(frag, "/"):
		to = doc + frag
	default:
		to, ok = g.anchors[target.String()+"#"+frag]
		if !ok {
			return "", false
		}
	}
	_, ok = g.nodes[to]
	return to, ok
}
