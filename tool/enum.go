package tool

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// setEnum parses the tag's values as the field's (or its items') kind.
func setEnum(f reflect.StructField, s *jsonschema.Schema, tag string) error {
	t := f.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if k := t.Kind(); k == reflect.Slice || k == reflect.Array {
		t, s = t.Elem(), s.Items
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	}
	if strings.TrimSpace(tag) == "" {
		return fmt.Errorf("empty enum tag on field %s", f.Name)
	}
	var values []any
	for raw := range strings.SplitSeq(tag, ",") {
		raw = strings.TrimSpace(raw)
		v, err := parseEnumValue(t.Kind(), raw)
		if err != nil {
			return fmt.Errorf("enum tag on field %s: %w", f.Name, err)
		}
		values = append(values, v)
	}
	if slices.Contains(s.Types, "null") {
		values = append(values, nil)
	}
	s.Enum = values
	return nil
}

var errEnumKind = errors.New("enum tag needs a string, number or boolean field")

func parseEnumValue(k reflect.Kind, raw string) (any, error) {
	switch k {
	case reflect.String:
		return raw, nil
	case reflect.Bool:
		return strconv.ParseBool(raw)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.ParseInt(raw, 10, 64)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.ParseUint(raw, 10, 64)
	case reflect.Float32, reflect.Float64:
		return strconv.ParseFloat(raw, 64)
	}
	return nil, fmt.Errorf("%w, not %s", errEnumKind, k)
}
