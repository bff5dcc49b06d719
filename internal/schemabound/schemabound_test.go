package schemabound

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// doubling is a schema whose subschemas apply two others to the same
// value at each of levels steps.
func doubling(levels int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
	for i := range levels {
		ref := `{"$ref":"#/$defs/d` + strconv.Itoa(i+1) + `"}`
		b.WriteString(`"d` + strconv.Itoa(i) + `":{"allOf":[` + ref + `,` + ref + `]},`)
	}
	b.WriteString(`"d` + strconv.Itoa(levels) + `":{"type":"object"}}}`)
	return b.String()
}

func TestCheck_RefusesValidationsThatCannotEnd(t *testing.T) {
	t.Parallel()
	refused := map[string]string{
		"root ref":        `{"$ref":"#"}`,
		"defs cycle":      `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`,
		"through anyOf":   `{"$defs":{"a":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/b"}]},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`,
		"through not":     `{"type":"object","not":{"$ref":"#"}}`,
		"through if":      `{"if":{"$ref":"#"}}`,
		"anchor":          `{"$defs":{"a":{"$anchor":"loop","oneOf":[{"$ref":"#loop"}]}},"$ref":"#loop"}`,
		"draft 7 anchor":  `{"definitions":{"a":{"$id":"#loop","oneOf":[{"$ref":"#loop"}]}},"$ref":"#loop"}`,
		"id":              `{"$id":"https://example.com/s.json","allOf":[{"$ref":"https://example.com/s.json"}]}`,
		"escaped pointer": `{"$defs":{"a/b":{"$ref":"#/$defs/a~1b"}},"$ref":"#/$defs/a~1b"}`,
		"dependentSchema": `{"dependentSchemas":{"name":{"$ref":"#"}}}`,
		"dynamic":         `{"$dynamicAnchor":"node","anyOf":[{"$dynamicRef":"#node"}]}`,
		"doubling":        doubling(40),
	}
	for name, schema := range refused {
		if _, err := Check([]byte(schema)); !errors.Is(err, ErrUnbounded) {
			t.Errorf("%s: %v, want ErrUnbounded", name, err)
		}
	}
	accepted := map[string]string{
		"tree": `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`,
		"defs tree": `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},` +
			`"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
		"shared defs":    `{"allOf":[{"$ref":"#/$defs/named"},{"$ref":"#/$defs/named"}],"$defs":{"named":{"required":["name"]}}}`,
		"meta-schema":    `{"$ref":"https://json-schema.org/draft/2020-12/schema"}`,
		"small doubling": doubling(10),
		"true":           `true`,
	}
	for name, schema := range accepted {
		if _, err := Check([]byte(schema)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Check([]byte(`{"type":`)); err == nil || errors.Is(err, ErrUnbounded) {
		t.Errorf("malformed schema: %v, want a JSON error", err)
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// costIs checks Cost's count exactly: within limit n, over n-1.
func costIs(t *testing.T, b *Bound, v any, n int) {
	t.Helper()
	if err := b.Cost(v, n); err != nil {
		t.Errorf("limit %d: %v", n, err)
	}
	if err := b.Cost(v, n-1); !errors.Is(err, ErrTooCostly) {
		t.Errorf("limit %d: %v, want ErrTooCostly", n-1, err)
	}
}

func TestCost_CountsEveryApplication(t *testing.T) {
	t.Parallel()
	b, err := Check([]byte(`{"type":"object","properties":{"a":{"type":"string"},"list":{"type":"array",` +
		`"prefixItems":[{"type":"number"}],"items":{"allOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}}},` +
		`"additionalProperties":{"type":"integer"},"propertyNames":{"maxLength":3},"$defs":{"n":{"minimum":0}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// root 1; "a": property 1 + name 1; "b": additional 1 + name 1;
	// "list": property 1 + name 1, its first element prefixItems 1, each
	// other items 5 (the allOf, its two $ref subschemas and what they name).
	costIs(t, b, decode(t, `{"a":"x","b":1,"list":[1,2,3]}`), 1+2+2+2+1+2*5)
	costIs(t, b, decode(t, `"just a string"`), 1)
}

// TestCost_RefusesValuesThatMultiplyApplications: a schema that applies two
// branches descending into the value at each level is fine on its own (its
// in-place applications are few), but an answer nested n deep is validated
// 2^n times over; the cost is priced in linear time and refused.
func TestCost_RefusesValuesThatMultiplyApplications(t *testing.T) {
	t.Parallel()
	b, err := Check([]byte(`{"$defs":{"a":{"anyOf":[{"type":"array","items":{"$ref":"#/$defs/a"},"maxItems":0},` +
		`{"type":"array","items":{"$ref":"#/$defs/a"}}]}},"$ref":"#/$defs/a"}`))
	if err != nil {
		t.Fatal(err)
	}
	nested := func(depth int) any { return decode(t, strings.Repeat("[", depth)+"1"+strings.Repeat("]", depth)) }
	if err := b.Cost(nested(8), DefaultCostLimit); err != nil {
		t.Errorf("8 deep: %v", err)
	}
	if err := b.Cost(nested(40), DefaultCostLimit); !errors.Is(err, ErrTooCostly) {
		t.Errorf("40 deep: %v, want ErrTooCostly", err)
	}
	// The same depth through a schema that descends once per level is cheap.
	tree, err := Check([]byte(`{"$defs":{"a":{"anyOf":[{"type":"number"},{"type":"array","items":{"$ref":"#/$defs/a"}}]}},"$ref":"#/$defs/a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := tree.Cost(nested(5000), DefaultCostLimit); err != nil {
		t.Errorf("5000 deep through a tree schema: %v", err)
	}
	// Many values through a plain schema stay within the default limit.
	var wide strings.Builder
	wide.WriteString("[")
	for i := range 50_000 {
		if i > 0 {
			wide.WriteString(",")
		}
		wide.WriteString(`{"n":1}`)
	}
	wide.WriteString("]")
	plain, err := Check([]byte(`{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Cost(decode(t, wide.String()), DefaultCostLimit); err != nil {
		t.Errorf("50,000 objects: %v", err)
	}
}

func FuzzCheckAndCost(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"$ref":"#"}}}`), []byte(`{"a":{"a":[1,2]}}`))
	f.Add([]byte(`{"$ref":"#"}`), []byte(`1`))
	f.Add([]byte(doubling(3)), []byte(`[[[]]]`))
	f.Add([]byte(`{"prefixItems":[true,{"$dynamicRef":"#x"}],"$dynamicAnchor":"x","patternProperties":{"^a":{}}}`), []byte(`[{"ab":1},2]`))
	f.Fuzz(func(t *testing.T, schema, value []byte) {
		b, err := Check(schema)
		if err != nil {
			return
		}
		var v any
		if json.Unmarshal(value, &v) != nil {
			return
		}
		_ = b.Cost(v, 1000)
	})
}
