package schemabound

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// benchSchema and benchAnswer are a structured-output schema and answer of
// the common shape: an object with a list of 20 small objects.
const benchSchema = `{"type":"object","required":["city","days"],"properties":{"city":{"type":"string"},` +
	`"days":{"type":"array","items":{"$ref":"#/$defs/day"}}},"$defs":{"day":{"type":"object","required":["date","high"],` +
	`"properties":{"date":{"type":"string"},"high":{"type":"number"},"low":{"type":"number"},"note":{"type":"string"}}}}}`

func benchAnswer(b *testing.B) any {
	b.Helper()
	var days []string
	for range 20 {
		days = append(days, `{"date":"2026-12-06","high":4.5,"low":-1,"note":"cloudy"}`)
	}
	var v any
	if err := json.Unmarshal([]byte(`{"city":"Oslo","days":[`+strings.Join(days, ",")+`]}`), &v); err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkCost prices the answer's validation (what every structured
// answer now pays before it is validated).
func BenchmarkCost(b *testing.B) {
	bd, err := Check([]byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	v := benchAnswer(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := bd.Cost(v, DefaultCostLimit); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate is jsonschema-go's validation of the same answer, for
// comparison.
func BenchmarkValidate(b *testing.B) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(benchSchema), &s); err != nil {
		b.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		b.Fatal(err)
	}
	v := benchAnswer(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := rs.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck is the schema's check, once per compiled schema.
func BenchmarkCheck(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check([]byte(benchSchema)); err != nil {
			b.Fatal(err)
		}
	}
}
