package agent

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/agentryhq/agentry/internal/schemabound"
	"github.com/google/jsonschema-go/jsonschema"
)

// schemaKeywords are the keywords google/jsonschema-go reads, as written in
// JSON Schema (its Schema's JSON names and the three it decodes by hand),
// but the annotations; read off the type at the first schema checked, not
// at start-up.
var schemaKeywords = sync.OnceValue(func() []string {
	names := []string{"type", "items", "dependencies"}
	t := reflect.TypeFor[jsonschema.Schema]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && !annotations[name] {
			names = append(names, name)
		}
	}
	return names
})

// annotations are the keywords that constrain nothing: read in another
// case, they change no answer's validation and are let be.
var annotations = map[string]bool{"$comment": true, "title": true, "description": true, "default": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "examples": true}

// subschemaFields are the fields of jsonschema.Schema holding subschemas
// (a *Schema, a []*Schema or a map[string]*Schema), with their names in
// error paths.
var subschemaFields = sync.OnceValue(func() []subschemaField {
	// The fields with no JSON name of their own.
	names := map[string]string{"Items": "items", "ItemsArray": "items", "DependencySchemas": "dependencies"}
	one := reflect.TypeFor[*jsonschema.Schema]()
	var out []subschemaField
	t := reflect.TypeFor[jsonschema.Schema]()
	for i := range t.NumField() {
		f := t.Field(i)
		ft := f.Type
		if ft != one && !((ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map) && ft.Elem() == one) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if n, ok := names[f.Name]; ok {
			name = n
		}
		out = append(out, subschemaField{index: i, name: name})
	}
	return out
})

type subschemaField struct {
	index int
	name  string
}

// checkKeywordCase refuses a schema with a member whose name is a keyword
// written in another case ("Type", "AllOf"). JSON Schema's keywords are
// case-sensitive, and a model, a provider enforcing the schema and
// tool.StrictSchema all ignore such a member, but jsonschema-go decodes
// through encoding/json, which matches names case-insensitively, and
// applies it: the answers would be validated against another schema than
// the one the model was given ({"type":"object","Type":"string"} is
// validated as a string). path is the JSON pointer of s.
func checkKeywordCase(s *jsonschema.Schema, path string) error {
	if s == nil {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(s.Extra)) {
		for _, kw := range schemaKeywords() {
			if strings.EqualFold(k, kw) {
				return fmt.Errorf("%s has the member %q, which the validator would read as the keyword %q although a model ignores it "+
					"(JSON Schema keywords are case-sensitive): write %q, or another name", schemaPlace(path), k, kw, kw)
			}
		}
	}
	v := reflect.ValueOf(s).Elem()
	for _, f := range subschemaFields() {
		switch x := v.Field(f.index).Interface().(type) {
		case *jsonschema.Schema:
			if err := checkKeywordCase(x, path+"/"+f.name); err != nil {
				return err
			}
		case []*jsonschema.Schema:
			for j, sub := range x {
				if err := checkKeywordCase(sub, fmt.Sprintf("%s/%s/%d", path, f.name, j)); err != nil {
					return err
				}
			}
		case map[string]*jsonschema.Schema:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if err := checkKeywordCase(x[k], schemabound.PointerJoin(path+"/"+f.name, k)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func schemaPlace(path string) string {
	if path == "" {
		return "the schema's root"
	}
	return path
}
