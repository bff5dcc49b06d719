package schemabound

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"
)

// ErrUnbounded is wrapped by Check's error for a schema whose validation of
// one value would not end or would apply more than MaxInPlace subschemas.
var ErrUnbounded = errors.New("schema validation is unbounded")

// ErrTooCostly is wrapped by Cost's error for a value whose validation would
// apply more subschemas than the limit.
var ErrTooCostly = errors.New("validating the value would take too long")

// MaxInPlace bounds how many subschemas may be applied to one value through
// the keywords that apply a subschema to the value itself ($ref, allOf,
// anyOf, …), each counted once per way of reaching it.
const MaxInPlace = 10_000

// DefaultCostLimit is the subschema applications a value's validation may
// make (Bound.Cost): far above what an honest answer needs (a 100,000-value
// document through a schema applying ten subschemas to each), small enough
// to validate in about a second.
const DefaultCostLimit = 1_000_000

// Bound is a checked schema, ready to price values. It is immutable and safe
// for concurrent use.
type Bound struct {
	nodes []node
}

// node is one subschema with its edges as indexes into Bound.nodes (-1:
// absent).
type node struct {
	// inPlace are the subschemas applied to the value this one validates.
	inPlace []int32
	// Object members: properties by name, additionalProperties to the
	// others; patternProperties, unevaluatedProperties and propertyNames
	// may apply to every member (a pattern's match is not worked out:
	// counting it is an upper bound).
	properties                                   map[string]int32
	patterns                                     []int32
	additionalProps, unevaluatedProps, propNames int32
	// Array elements: prefixItems (or draft 7's items list) by position,
	// items or additionalItems to the elements after them; contains and
	// unevaluatedItems to every element.
	prefix                                        []int32
	items, additionalItems, contains, unevalItems int32
	// shared: more than one edge leads here (Cost memoizes it).
	shared bool
}

// Check parses a JSON Schema and refuses one whose validation of a single
// value would not end: a subschema that applies itself to the same value
// through $ref, $dynamicRef, allOf, anyOf, oneOf, not, if/then/else or
// dependentSchemas, or that applies more than MaxInPlace subschemas to one
// value. Keywords applying subschemas to parts of the value (properties,
// items, …) are bounded by the value's size and priced by Cost. References
// outside the schema (a meta-schema) are not followed.
func Check(raw []byte) (*Bound, error) {
	return check(raw, false)
}

// CheckParsed is Check for a schema google/jsonschema-go parsed, bounded as
// that validator reads it: its keywords match case-insensitively
// ({"$REF":"#"} is a $ref), and only the root's $schema names a draft, one
// of draft 7's two or else 2020-12.
func CheckParsed(s *jsonschema.Schema) (*Bound, error) {
	canon := *s
	if canon.Schema != "http://json-schema.org/draft-07/schema#" && canon.Schema != "https://json-schema.org/draft-07/schema#" {
		canon.Schema = "https://json-schema.org/draft/2020-12/schema"
	}
	read, err := json.Marshal(&canon)
	if err != nil {
		return nil, err
	}
	return check(read, true)
}

func check(raw []byte, rootDraftOnly bool) (*Bound, error) {
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, err
	}
	g := graph{rootDraftOnly: rootDraftOnly, root: root, refTargets: map[int32]bool{}, index: map[string]int32{}, resources: map[string]string{}, anchors: map[string]string{}, dynamic: map[string][]string{}}
	base, _ := url.Parse("https://schema.agentry.invalid/schema.json")
	g.resources[base.String()] = ""
	g.walk(root, "", base, draftOf(root, 2020))
	b := &Bound{}
	// A reference may lead to a place no keyword walked (an unknown
	// keyword, an enum's value, "#/properties" itself): edges walks it
	// then, so the loop runs over the nodes it adds too.
	for i := 0; i < len(g.objs); i++ {
		b.nodes = append(b.nodes, g.edges(i))
	}
	g.addRecursive(b.nodes)
	b.markShared()
	if err := b.checkInPlace(g.ptrs); err != nil {
		return nil, err
	}
	return b, nil
}

// markShared marks the nodes more than one edge leads to.
func (b *Bound) markShared() {
	in := make([]int, len(b.nodes))
	to := func(e int32) {
		if e >= 0 {
			in[e]++
		}
	}
	for i := range b.nodes {
		nd := &b.nodes[i]
		for _, e := range nd.inPlace {
			to(e)
		}
		for _, e := range nd.properties {
			to(e)
		}
		for _, list := range [][]int32{nd.patterns, nd.prefix} {
			for _, e := range list {
				to(e)
			}
		}
		for _, e := range []int32{nd.additionalProps, nd.unevaluatedProps, nd.propNames, nd.items, nd.additionalItems, nd.contains, nd.unevalItems} {
			to(e)
		}
	}
	for i := range b.nodes {
		b.nodes[i].shared = in[i] > 1
	}
}

// checkInPlace walks the in-place edges post-order: a node on the path
// being explored reached again is a cycle; a finished node's count of
// applications is kept.
func (b *Bound) checkInPlace(ptrs []string) error {
	const exploring = -1
	count := make([]int, len(b.nodes))
	for i := range count {
		count[i] = -2 // not seen
	}
	type frame struct {
		n    int32
		next int
		sum  int
	}
	tooMany := func(n int32) error {
		return fmt.Errorf("%w: the subschema at %q applies more than %d subschemas to one value (through $ref, allOf, anyOf, oneOf, …)", ErrUnbounded, "#"+ptrs[n], MaxInPlace)
	}
	for start := range b.nodes {
		if count[start] != -2 {
			continue
		}
		stack := []frame{{n: int32(start), sum: 1}}
		count[start] = exploring
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if edges := b.nodes[f.n].inPlace; f.next < len(edges) {
				to := edges[f.next]
				f.next++
				switch c := count[to]; c {
				case -2:
					count[to] = exploring
					stack = append(stack, frame{n: to, sum: 1})
				case exploring:
					return fmt.Errorf("%w: the subschema at %q applies itself to the same value (through $ref, allOf, anyOf, oneOf, …) without end", ErrUnbounded, "#"+ptrs[to])
				default:
					if f.sum += c; f.sum > MaxInPlace {
						return tooMany(f.n)
					}
				}
				continue
			}
			count[f.n] = f.sum
			done := f.sum
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				p := &stack[len(stack)-1]
				if p.sum += done; p.sum > MaxInPlace {
					return tooMany(p.n)
				}
			}
		}
	}
	return nil
}

// Cost returns an error wrapping ErrTooCostly when validating v against the
// schema could apply more than limit subschemas, counting every way of
// reaching a subschema as the validators do and every keyword that may
// apply (both branches of an if, every patternProperties entry): an upper
// bound, worked out in time linear in the value's size times the schema's
// (a subschema reached by more than one edge is priced once per object or
// array). v is a decoded JSON value (map[string]any, []any and scalars).
func (b *Bound) Cost(v any, limit int) error {
	if len(b.nodes) == 0 {
		return nil // true, false or not an object: nothing to apply
	}
	p := pricer{b: b, limit: limit}
	if c := p.cost(0, v); c > limit {
		return fmt.Errorf("%w: it would apply more than %d subschemas", ErrTooCostly, limit)
	}
	return nil
}

// pricer prices one value.
type pricer struct {
	b     *Bound
	memo  map[memoKey]int
	limit int
}

// memoKey is a shared subschema and the object or array it validates, by
// identity.
type memoKey struct {
	n int32
	// size tells apart arrays sharing their first element (sub-slices of
	// one backing array, which a value built in Go may hold).
	size int
	v    unsafe.Pointer
}

// add sums saturating just above the limit.
func (p *pricer) add(a, c int) int {
	if s := a + c; s <= p.limit {
		return s
	}
	return p.limit + 1
}

// cost is the applications validating v against node n makes. Only a
// node reached by more than one edge (shared) is memoized: any other is
// reached once for each time its one parent is, which its parent's memo or
// its own uniqueness bounds; a scalar is not (its cost is its in-place
// subschemas', at most MaxInPlace).
func (p *pricer) cost(n int32, v any) int {
	nd := &p.b.nodes[n]
	var key memoKey
	if nd.shared {
		switch t := v.(type) {
		case map[string]any:
			if len(t) > 0 {
				key = memoKey{n, len(t), reflect.ValueOf(t).UnsafePointer()}
			}
		case []any:
			if len(t) > 0 {
				key = memoKey{n, len(t), unsafe.Pointer(unsafe.SliceData(t))}
			}
		}
		if key.v != nil {
			if c, ok := p.memo[key]; ok {
				return c
			}
		}
	}
	c := 1
	for _, e := range nd.inPlace {
		if c = p.add(c, p.cost(e, v)); c > p.limit {
			return c
		}
	}
	c = p.parts(nd, v, c)
	if key.v != nil {
		if p.memo == nil {
			p.memo = make(map[memoKey]int)
		}
		p.memo[key] = c
	}
	return c
}

// parts adds the applications to v's members or elements.
func (p *pricer) parts(nd *node, v any, c int) int {
	switch t := v.(type) {
	case map[string]any:
		for k, kid := range t {
			e, named := nd.properties[k]
			if !named {
				e = nd.additionalProps
			}
			if !p.apply(&c, e, kid) || !p.apply(&c, nd.unevaluatedProps, kid) || !p.apply(&c, nd.propNames, aName) {
				return c
			}
			for _, e := range nd.patterns {
				if !p.apply(&c, e, kid) {
					return c
				}
			}
		}
	case []any:
		for i, kid := range t {
			if i < len(nd.prefix) {
				if !p.apply(&c, nd.prefix[i], kid) {
					return c
				}
			} else if !p.apply(&c, nd.items, kid) || !p.apply(&c, nd.additionalItems, kid) {
				return c
			}
			if !p.apply(&c, nd.contains, kid) || !p.apply(&c, nd.unevalItems, kid) {
				return c
			}
		}
	}
	return c
}

// aName stands for a member's name, which propertyNames validates: a
// string, whose value does not change what it costs.
var aName any = ""

// apply adds to *c the applications validating v against node e (none
// when e is -1), reporting whether *c is still within the limit.
func (p *pricer) apply(c *int, e int32, v any) bool {
	if e >= 0 {
		*c = p.add(*c, p.cost(e, v))
	}
	return *c <= p.limit
}

// graph is a schema's subschemas by JSON pointer, with what its references
// resolve to, while Check builds a Bound.
type graph struct {
	rootDraftOnly bool
	root          any
	objs          []map[string]any
	ptrs          []string
	bases         []*url.URL
	// drafts are the nodes' drafts (4, 6, 7, 2019, 2020): before 2019 the
	// identifier of draft 4 is "id" and a $ref's siblings, $id included,
	// are ignored.
	drafts []int
	// resourceOf is the index of the node's resource (the subschema with
	// the $id it is under, or the root); refTargets the nodes a $ref,
	// $dynamicRef or $recursiveRef may lead to; recursiveRefs the nodes
	// with a $recursiveRef whose target has "$recursiveAnchor": true.
	resourceOf    []int32
	refTargets    map[int32]bool
	recursiveRefs []int32
	index         map[string]int32
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

var (
	pointerEscaper   = strings.NewReplacer("~", "~0", "/", "~1")
	pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")
)

// PointerJoin appends member name key to JSON pointer ptr, escaped as RFC
// 6901 says ("~" as "~0", "/" as "~1").
func PointerJoin(ptr, key string) string {
	return ptr + "/" + pointerEscaper.Replace(key)
}

func (g *graph) walk(v any, ptr string, base *url.URL, draft int) {
	g.walkIn(v, ptr, base, draft, -1)
}

// idOf is the identifier of a subschema in a draft, without its fragment.
func idOf(obj map[string]any, draft int) string {
	if _, ref := obj["$ref"]; ref && draft < 2019 {
		return ""
	}
	key := "$id"
	if draft == 4 {
		key = "id"
	}
	id, _ := obj[key].(string)
	id, _, _ = strings.Cut(id, "#")
	return id
}

// draftOf is the draft a schema's "$schema" names, or draft.
func draftOf(v any, draft int) int {
	obj, _ := v.(map[string]any)
	uri, _ := obj["$schema"].(string)
	for _, d := range []struct {
		name    string
		version int
	}{{"draft-04", 4}, {"draft-06", 6}, {"draft-07", 7}, {"2019-09", 2019}, {"2020-12", 2020}} {
		if strings.Contains(uri, d.name) {
			return d.version
		}
	}
	return draft
}

// walkIn is walk with the index of the resource v is in (-1: v is the
// root, or a place reached only by a reference).
func (g *graph) walkIn(v any, ptr string, base *url.URL, draft int, resource int32) {
	obj, ok := v.(map[string]any)
	if !ok {
		return // true, false, or not a schema
	}
	if _, seen := g.index[ptr]; seen {
		return
	}
	// A $schema names the draft of the root, or of a subschema with an
	// identifier in that draft (a resource); elsewhere it is ignored, as
	// santhosh-tekuri/jsonschema ignores it. rootDraftOnly: jsonschema-go
	// reads the root's only.
	if d := draftOf(obj, draft); ptr == "" || (!g.rootDraftOnly && idOf(obj, d) != "") {
		draft = d
	}
	idKey := "$id"
	if draft == 4 {
		idKey = "id"
	}
	if _, ref := obj["$ref"]; ref && draft < 2019 {
		idKey = "" // "All other properties in a $ref object MUST be ignored"
	}
	if id, ok := obj[idKey].(string); ok {
		if u, err := url.Parse(id); err == nil {
			nb := base.ResolveReference(u)
			if frag := nb.Fragment; frag != "" && !strings.HasPrefix(frag, "/") {
				// Draft 7: "$id": "#name" is an anchor.
				nb.Fragment = ""
				g.register(g.anchors, nb.String()+"#"+frag, ptr)
			} else {
				nb.Fragment, nb.RawFragment = "", ""
				base = nb
				g.register(g.resources, base.String(), ptr)
				resource = -1
			}
		}
	}
	if resource < 0 {
		resource = int32(len(g.objs))
	}
	g.resourceOf = append(g.resourceOf, resource)
	g.drafts = append(g.drafts, draft)
	g.index[ptr] = int32(len(g.objs))
	g.objs, g.ptrs, g.bases = append(g.objs, obj), append(g.ptrs, ptr), append(g.bases, base)
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		if a, ok := obj[k].(string); ok {
			g.register(g.anchors, base.String()+"#"+a, ptr)
			if k == "$dynamicAnchor" {
				g.dynamic[a] = append(g.dynamic[a], ptr)
			}
		}
	}
	for _, ks := range [][]string{inPlaceOne, partOne} {
		for _, k := range ks {
			g.walkIn(obj[k], PointerJoin(ptr, k), base, draft, resource)
		}
	}
	for _, ks := range [][]string{inPlaceList, partList} {
		for _, k := range ks {
			if list, ok := obj[k].([]any); ok {
				for i, s := range list {
					g.walkIn(s, PointerJoin(ptr, k)+"/"+strconv.Itoa(i), base, draft, resource)
				}
			}
		}
	}
	for _, ks := range [][]string{inPlaceMap, partMap} {
		for _, k := range ks {
			if m, ok := obj[k].(map[string]any); ok {
				for name, s := range m {
					g.walkIn(s, PointerJoin(PointerJoin(ptr, k), name), base, draft, resource)
				}
			}
		}
	}
}

// register records the first subschema with an identifier: a later one
// (found in a place only a reference leads to) does not replace it.
func (g *graph) register(m map[string]string, key, ptr string) {
	if _, ok := m[key]; !ok {
		m[key] = ptr
	}
}

// at is the index of the subschema at ptr, -1 if there is none.
func (g *graph) at(ptr string) int32 {
	if i, ok := g.index[ptr]; ok {
		return i
	}
	return -1
}

// target is the index of the subschema a reference from node from leads
// to, -1 if there is none. A place no subschema keyword leads to (an
// unknown keyword's value, an enum's, "#/properties" itself) is still one
// santhosh-tekuri/jsonschema validates with: it is walked then.
func (g *graph) target(from int, ptr string) int32 {
	if i := g.at(ptr); i >= 0 {
		return i
	}
	v, ok := g.lookup(ptr)
	if !ok {
		return -1
	}
	g.walkIn(v, ptr, g.bases[from], g.drafts[from], -1)
	return g.at(ptr)
}

// lookup finds the value at a JSON pointer in the document.
func (g *graph) lookup(ptr string) (any, bool) {
	if ptr != "" && !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	v, ok := g.root, true
	if ptr == "" {
		return v, true
	}
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = pointerUnescaper.Replace(seg)
		switch t := v.(type) {
		case map[string]any:
			if v, ok = t[seg]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// addRecursive adds to each $recursiveRef whose target has
// "$recursiveAnchor": true the subschemas it may resolve to at validation
// time: the outermost subschema in the dynamic scope whose resource has
// the anchor, so any resource root or reference target in such a
// resource.
func (g *graph) addRecursive(nodes []node) {
	if len(g.recursiveRefs) == 0 {
		return
	}
	var may []int32
	for i := range g.objs {
		r := g.resourceOf[i]
		if anchored, _ := g.objs[r]["$recursiveAnchor"].(bool); anchored && (r == int32(i) || g.refTargets[int32(i)]) {
			may = append(may, int32(i))
		}
	}
	for _, i := range g.recursiveRefs {
		nodes[i].inPlace = append(nodes[i].inPlace, may...)
	}
}

// edges lists the subschemas node i applies, to its value and to its parts.
func (g *graph) edges(i int) node {
	obj, ptr := g.objs[i], g.ptrs[i]
	var n node
	add := func(p string) {
		if j := g.at(p); j >= 0 {
			n.inPlace = append(n.inPlace, j)
		}
	}
	for _, k := range inPlaceOne {
		add(PointerJoin(ptr, k))
	}
	for _, k := range inPlaceList {
		if list, ok := obj[k].([]any); ok {
			for j := range list {
				add(PointerJoin(ptr, k) + "/" + strconv.Itoa(j))
			}
		}
	}
	for _, k := range inPlaceMap {
		if m, ok := obj[k].(map[string]any); ok {
			for name := range m {
				add(PointerJoin(PointerJoin(ptr, k), name))
			}
		}
	}
	addRef := func(ref string) int32 {
		j := g.target(i, g.resolve(i, ref))
		if j >= 0 {
			n.inPlace = append(n.inPlace, j)
			g.refTargets[j] = true
		}
		return j
	}
	if ref, ok := obj["$ref"].(string); ok {
		addRef(ref)
	}
	if ref, ok := obj["$recursiveRef"].(string); ok {
		if j := addRef(ref); j >= 0 {
			if anchored, _ := g.objs[j]["$recursiveAnchor"].(bool); anchored {
				g.recursiveRefs = append(g.recursiveRefs, int32(i))
			}
		}
	}
	if ref, ok := obj["$dynamicRef"].(string); ok {
		addRef(ref)
		// Resolved at validation time against the dynamic scope: any
		// subschema with that $dynamicAnchor may be the one.
		if _, name, ok := strings.Cut(ref, "#"); ok {
			for _, p := range g.dynamic[name] {
				add(p)
			}
		}
	}
	one := func(k string) int32 { return g.at(PointerJoin(ptr, k)) }
	n.additionalProps, n.unevaluatedProps, n.propNames = one("additionalProperties"), one("unevaluatedProperties"), one("propertyNames")
	n.items, n.additionalItems, n.contains, n.unevalItems = one("items"), one("additionalItems"), one("contains"), one("unevaluatedItems")
	if m, ok := obj["properties"].(map[string]any); ok {
		n.properties = make(map[string]int32, len(m))
		for name := range m {
			if j := g.at(PointerJoin(PointerJoin(ptr, "properties"), name)); j >= 0 {
				n.properties[name] = j
			}
		}
	}
	if m, ok := obj["patternProperties"].(map[string]any); ok {
		for name := range m {
			if j := g.at(PointerJoin(PointerJoin(ptr, "patternProperties"), name)); j >= 0 {
				n.patterns = append(n.patterns, j)
			}
		}
	}
	for _, k := range partList {
		if list, ok := obj[k].([]any); ok {
			for j := range list {
				n.prefix = append(n.prefix, g.at(PointerJoin(ptr, k)+"/"+strconv.Itoa(j)))
			}
		}
	}
	return n
}

// resolve finds the pointer of the subschema a reference from node i names;
// "" (no subschema: not a valid pointer) for one outside the schema (a
// meta-schema the validator knows).
func (g *graph) resolve(i int, ref string) string {
	const none = "\x00none"
	u, err := url.Parse(ref)
	if err != nil {
		return none
	}
	target := g.bases[i].ResolveReference(u)
	frag := target.Fragment
	target.Fragment, target.RawFragment = "", ""
	doc, ok := g.resources[target.String()]
	if !ok {
		return none
	}
	switch {
	case frag == "":
		return doc
	case strings.HasPrefix(frag, "/"):
		return doc + frag
	default:
		if to, ok := g.anchors[target.String()+"#"+frag]; ok {
			return to
		}
		return none
	}
}
