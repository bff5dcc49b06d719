package tool

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaFor infers the JSON Schema of what encoding/json decodes into t: the
// schema of a Func tool's arguments and of an agent's structured output
// (agent.OutputSchemaFor). It writes the schemas github.com/google/
// jsonschema-go's ForType writes for plain types, but a struct's properties
// are the fields encoding/json reads, by its rules: an embedded struct with a
// json name, or an embedded non-struct type, is one property (jsonschema-go
// promoted the former's fields and dropped the latter); of two fields with
// one JSON name the shallower (then the tagged) one wins, and equal ones
// cancel (jsonschema-go wrote a schema that did not compile); a scalar field
// with the string option is a string; a field encoding/json cannot set (one
// reached through an embedded pointer to an unexported struct) is left out.
// Beyond jsonschema-go: a recursive type is written once under $defs (the
// root type as "#") and referred to; a []byte is base64 text; a map with
// integer keys constrains its property names to decimal integers; an
// interface with methods takes only null; a type with its own UnmarshalJSON
// below the root takes any value. `jsonschema:"..."` tags are descriptions
// and `enum:"a,b"` tags allowed values.
func SchemaFor(t reflect.Type) (*jsonschema.Schema, error) {
	in := inferrer{stack: map[reflect.Type]bool{}, refs: map[reflect.Type]string{}}
	s, err := in.schema(t)
	if err != nil {
		return nil, err
	}
	if len(in.defs) > 0 {
		s.Defs = in.defs
	}
	return s, nil
}

type inferrer struct {
	stack map[reflect.Type]bool // named types being inferred
	root  reflect.Type          // the type asked for, without pointers
	// A named type met again inside itself is recursive: it is written once,
	// under $defs (the root as the whole schema, "#"), and referred to.
	refs map[reflect.Type]string // recursive type -> its $ref
	defs map[string]*jsonschema.Schema
}

func (in *inferrer) schema(t reflect.Type) (*jsonschema.Schema, error) {
	nullable := false
	for t.Kind() == reflect.Pointer {
		nullable = true
		t = t.Elem()
	}
	if in.root == nil {
		in.root = t
	}
	var s *jsonschema.Schema
	if ref, ok := in.refs[t]; ok {
		s = &jsonschema.Schema{Ref: ref} // t is being inferred, or done under $defs
	} else if in.stack[t] {
		s = &jsonschema.Schema{Ref: in.newRef(t)}
	} else {
		if t.Name() != "" {
			in.stack[t] = true
		}
		var err error
		s, err = in.schemaOf(t)
		delete(in.stack, t)
		if err != nil {
			return nil, err
		}
		if ref, ok := in.refs[t]; ok && t != in.root {
			in.defs[defName(ref)] = s
			s = &jsonschema.Schema{Ref: ref}
		}
	}
	if nullable {
		switch {
		case s.Ref != "":
			s = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "null"}, s}}
		case s.Type != "":
			s.Type, s.Types = "", []string{"null", s.Type}
		}
	}
	return s, nil
}

const defsPrefix = "#/$defs/"

func defName(ref string) string { return strings.TrimPrefix(ref, defsPrefix) }

// newRef names recursive type t's place in the schema: "#" for the root,
// else a $defs entry named after the type (letters, digits and '_', so that
// generic instances and same-named types of two packages stay distinct and
// need no JSON pointer escapes).
func (in *inferrer) newRef(t reflect.Type) string {
	ref := "#"
	if t != in.root {
		base := strings.Map(func(r rune) rune {
			if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return r
			}
			return '_'
		}, t.Name())
		taken := func(name string) bool {
			for _, r := range in.refs {
				if r == defsPrefix+name {
					return true
				}
			}
			return false
		}
		name := base
		for i := 2; taken(name); i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		ref = defsPrefix + name
		if in.defs == nil {
			in.defs = map[string]*jsonschema.Schema{}
		}
	}
	in.refs[t] = ref
	return ref
}

// jsonForms are the schemas of standard types whose JSON form is not what
// their Go kind suggests: RFC 3339 times and level names are strings, a
// json.RawMessage is any JSON value, big.Int and json.Number are number
// literals (a json.Number also as a string).
var jsonForms = map[reflect.Type]func() *jsonschema.Schema{
	reflect.TypeFor[time.Time]():       func() *jsonschema.Schema { return &jsonschema.Schema{Type: "string"} },
	reflect.TypeFor[slog.Level]():      func() *jsonschema.Schema { return &jsonschema.Schema{Type: "string"} },
	reflect.TypeFor[json.RawMessage](): func() *jsonschema.Schema { return &jsonschema.Schema{} },
	reflect.TypeFor[json.Number]():     func() *jsonschema.Schema { return &jsonschema.Schema{Type: "number"} },
	reflect.TypeFor[big.Int]():         func() *jsonschema.Schema { return &jsonschema.Schema{Type: "integer"} },
}

var (
	intKinds  = []reflect.Kind{reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64}
	uintKinds = []reflect.Kind{reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr}
)

// base64Pattern matches what base64.StdEncoding.DecodeString accepts:
// padded groups of four, with line breaks anywhere.
const base64Pattern = `^[\r\n]*(?:(?:[A-Za-z0-9+/][\r\n]*){4})*(?:(?:[A-Za-z0-9+/][\r\n]*){2}(?:=[\r\n]*=|[A-Za-z0-9+/][\r\n]*=)[\r\n]*)?$`

// textOnly reports whether encoding/json decodes t from a JSON string only:
// t (or *t) implements encoding.TextUnmarshaler and not json.Unmarshaler
// (uuid.UUID, netip.Addr, big.Float).
func textOnly(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Kind() != reflect.Interface && p.Implements(textUnmarshaler) && !p.Implements(jsonUnmarshaler)
}

func (in *inferrer) schemaOf(t reflect.Type) (*jsonschema.Schema, error) {
	if form := jsonForms[t]; form != nil {
		return form(), nil
	}
	if t != in.root && t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		// Its own UnmarshalJSON decides what it reads: any JSON value may
		// do. (An argument type's own is taken to read its fields: a tool's
		// arguments are an object in any case.)
		return &jsonschema.Schema{}, nil
	}
	if textOnly(t) {
		return &jsonschema.Schema{Type: "string"}, nil
	}
	s := new(jsonschema.Schema)
	bounds := func(lo, hi float64) {
		s.Type, s.Minimum = "integer", &lo
		if hi != 0 {
			s.Maximum = &hi
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		s.Type = "boolean"
	case reflect.Int, reflect.Int64:
		s.Type = "integer"
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		bounds(0, 0)
	case reflect.Int8:
		bounds(math.MinInt8, math.MaxInt8)
	case reflect.Uint8:
		bounds(0, math.MaxUint8)
	case reflect.Int16:
		bounds(math.MinInt16, math.MaxInt16)
	case reflect.Uint16:
		bounds(0, math.MaxUint16)
	case reflect.Int32:
		bounds(math.MinInt32, math.MaxInt32)
	case reflect.Uint32:
		bounds(0, math.MaxUint32)
	case reflect.Float32, reflect.Float64:
		s.Type = "number"
	case reflect.String:
		s.Type = "string"
	case reflect.Interface:
		if t.NumMethod() > 0 {
			// encoding/json fills only an empty interface; into an
			// interface with methods it decodes null alone.
			s.Type = "null"
		}
		// Else any value.
	case reflect.Map:
		// encoding/json reads a key with the key type's UnmarshalText, else
		// as it is (string kinds), else as a decimal integer (strconv's
		// ParseInt or ParseUint); other key types it refuses.
		kt := t.Key()
		switch {
		case reflect.PointerTo(kt).Implements(textUnmarshaler), kt.Kind() == reflect.String:
		case slices.Contains(intKinds, kt.Kind()):
			s.PropertyNames = &jsonschema.Schema{Pattern: `^[+-]?[0-9]+$`}
		case slices.Contains(uintKinds, kt.Kind()):
			s.PropertyNames = &jsonschema.Schema{Pattern: `^[0-9]+$`}
		default:
			return nil, fmt.Errorf("unsupported map key type %v (encoding/json decodes keys of string or integer kinds, or encoding.TextUnmarshaler types)", kt)
		}
		s.Type = "object"
		var err error
		if s.AdditionalProperties, err = in.schema(t.Elem()); err != nil {
			return nil, fmt.Errorf("computing map value schema: %v", err)
		}
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			// encoding/json reads a byte slice from base64 text
			// (base64.StdEncoding, which skips line breaks).
			s.Types = []string{"null", "string"}
			s.ContentEncoding = "base64"
			s.Pattern = base64Pattern
			break
		}
		if t.Kind() == reflect.Slice {
			s.Types = []string{"null", "array"}
		} else {
			s.Type = "array"
			s.MinItems, s.MaxItems = jsonschema.Ptr(t.Len()), jsonschema.Ptr(t.Len())
		}
		var err error
		if s.Items, err = in.schema(t.Elem()); err != nil {
			return nil, fmt.Errorf("computing element schema: %v", err)
		}
	case reflect.Struct:
		return in.structSchema(t)
	default:
		return nil, fmt.Errorf("type %v is unsupported by jsonschema", t)
	}
	return s, nil
}

// descriptionPrefix is what jsonschema-go refuses at the start of a
// description tag (reserved for keywords).
var descriptionPrefix = regexp.MustCompile("^[^ \t\n]*=")

func (in *inferrer) structSchema(t reflect.Type) (*jsonschema.Schema, error) {
	s := &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	if t.NumField() > 0 {
		s.Properties = map[string]*jsonschema.Schema{} // as jsonschema-go writes it
	}
	for _, f := range jsonFields(t) {
		if f.unsettable {
			continue
		}
		fs, err := in.schema(f.sf.Type)
		if err != nil {
			return nil, err
		}
		if f.quoted {
			// `json:",string"`: encoding/json reads the value from inside a
			// JSON string ("5", "true"), as a JSON literal of the kind.
			fs = &jsonschema.Schema{Type: "string", Pattern: quotedPattern(f.sf.Type)}
			if f.sf.Type.Kind() == reflect.Pointer {
				fs.Type, fs.Types = "", []string{"null", "string"}
			}
		}
		if tag, ok := f.sf.Tag.Lookup("jsonschema"); ok {
			if tag == "" {
				return nil, fmt.Errorf("empty jsonschema tag on struct field %s.%s", t, f.sf.Name)
			}
			if descriptionPrefix.MatchString(tag) {
				return nil, fmt.Errorf("tag must not begin with 'WORD=': %q", tag)
			}
			fs.Description = tag
		}
		if tag, ok := f.sf.Tag.Lookup("enum"); ok {
			sf := f.sf
			if f.quoted {
				sf.Type = reflect.TypeFor[string]() // the values are strings
				if f.sf.Type.Kind() == reflect.Pointer {
					sf.Type = reflect.TypeFor[*string]()
				}
			}
			if err := setEnum(sf, fs, tag); err != nil {
				return nil, err
			}
		}
		s.Properties[f.name] = fs
		s.PropertyOrder = append(s.PropertyOrder, f.name)
		if !f.optional {
			s.Required = append(s.Required, f.name)
		}
	}
	return s, nil
}

// quotedPattern is the text encoding/json reads from the string of a field
// of type t with the string option: a JSON literal of t's kind.
func quotedPattern(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch k := t.Kind(); {
	case k == reflect.Bool:
		return `^(?:true|false)$`
	case k == reflect.String:
		return `^"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"$`
	case slices.Contains(intKinds, k):
		return `^-?(?:0|[1-9][0-9]*)$`
	case slices.Contains(uintKinds, k):
		return `^(?:0|[1-9][0-9]*)$`
	}
	return `^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$` // floats
}

// jsonField is a struct field encoding/json reads, under its JSON name.
type jsonField struct {
	name     string
	sf       reflect.StructField
	index    []int
	tagged   bool
	optional bool // omitempty or omitzero
	quoted   bool // the string option on a scalar field
	// unsettable: encoding/json fails on any value for it (it still takes
	// its name from other fields, so it is left out only after dominance).
	unsettable bool
}

// jsonFields lists the fields encoding/json decodes into for struct type t,
// in field order, following its rules (encoding/json's typeFields):
// untagged embedded structs are walked breadth-first for promoted fields; a
// JSON name held by several fields goes to the shallowest, then the tagged
// one, and to none when that leaves a tie.
func jsonFields(t reflect.Type) []jsonField {
	type scan struct {
		typ     reflect.Type
		index   []int
		blocked bool // reached through an unexported embedded pointer
	}
	var fields []jsonField
	var current []scan
	next := []scan{{typ: t}}
	var count map[reflect.Type]int
	nextCount := map[reflect.Type]int{t: 1}
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := range f.typ.NumField() {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(slices.Clip(f.index), i)
				// encoding/json cannot allocate an unexported embedded
				// pointer: a value for a field through it is an error, for
				// the field itself a panic.
				blocked := f.blocked || sf.Anonymous && !sf.IsExported() && sf.Type.Kind() == reflect.Pointer
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					jf := jsonField{name: name, sf: sf, index: index, tagged: name != "", unsettable: blocked}
					if name == "" {
						jf.name = sf.Name
					}
					for o := range strings.SplitSeq(opts, ",") {
						jf.optional = jf.optional || o == "omitempty" || o == "omitzero"
						if o == "string" {
							switch ft.Kind() {
							case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
								reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
								reflect.Float32, reflect.Float64, reflect.String:
								jf.quoted = true
							}
						}
					}
					fields = append(fields, jf)
					if count[f.typ] > 1 {
						// Reached through two embeddings at one depth: the
						// duplicate cancels it below, as in encoding/json.
						fields = append(fields, jf)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, scan{typ: ft, index: index, blocked: blocked})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i, n := 0, 0; i < len(fields); i += n {
		for n = 1; i+n < len(fields) && fields[i+n].name == fields[i].name; n++ {
		}
		group := fields[i : i+n]
		if len(group) > 1 && len(group[0].index) == len(group[1].index) && group[0].tagged == group[1].tagged {
			continue // a tie: encoding/json ignores the name
		}
		out = append(out, group[0])
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out
}

// validTagName is encoding/json's test of a json tag's name.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
