package run

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/internal/lossless"
	"github.com/agentryhq/agentry/model"
)

// generalSessionMetrics is UnmarshalJSON's general path, by reflection.
func generalSessionMetrics(data []byte) (SessionMetrics, error) {
	var v sessionMetrics
	extra, err := lossless.Unmarshal(data, &v)
	v.Extra = extra
	return SessionMetrics(v), err
}

// samePlainAsGeneral checks that the plain paths give what the general ones
// do: the decoded value of data, when the plain reader takes it, and the
// bytes of its encoding, when the plain writer takes the value.
func samePlainAsGeneral(t *testing.T, data []byte) (decoded, encoded bool) {
	t.Helper()
	general, err := generalSessionMetrics(data)
	plain, ok := decodePlainSessionMetrics(data)
	if ok {
		if err != nil {
			t.Fatalf("%s: plain read it, the general path failed: %v", data, err)
		}
		if !reflect.DeepEqual(plain, general) {
			t.Fatalf("%s: plain %#v, general %#v", data, plain, general)
		}
	}
	if err != nil {
		return ok, false
	}
	gok := samePlainWrite(t, data, &general)
	// A sum, as a turn writes it: counts and costs Add computed (0.1+0.2
	// is no decimal that was read).
	sum := general.clone()
	sum.Add(&general)
	sum.Add(&general)
	samePlainWrite(t, data, &sum)
	return ok, gok
}

// samePlainWrite checks that the plain writer, when it takes m, writes the
// bytes the general one does; data names the case.
func samePlainWrite(t *testing.T, data []byte, m *SessionMetrics) bool {
	t.Helper()
	want, werr := lossless.Marshal((*sessionMetrics)(m), m.Extra)
	got, gok := appendPlainSessionMetrics(nil, m)
	if gok && (werr != nil || !bytes.Equal(got, want)) {
		t.Fatalf("%s: plain wrote %s, general %s (%v)", data, got, want, werr)
	}
	return gok
}

// TestPlainSessionMetrics_SameAsGeneral: the metrics this package writes
// take the plain paths both ways and give what the general paths give;
// what they would keep in Extra, or read in another form, does not.
func TestPlainSessionMetrics_SameAsGeneral(t *testing.T) {
	for _, c := range []struct {
		data  string
		plain bool
	}{
		{`{}`, true},
		{`{"input_tokens":12,"output_tokens":3,"total_tokens":15}`, true},
		{`{"input_tokens":12,"details":{"model":[{"id":"gpt-4o","provider":"OpenAI","input_tokens":12,"cost":0.25}]}}`, true},
		{` { "details" : { "model" : [ { "id" : "m" , "provider" : "p" } , {"id":"n","provider":"p","reasoning_tokens":-2} ] , "output_model": [] } , "cost": 1.5e-7 } `, true},
		{`{"details":{"z":[{"id":"a","provider":"b"}],"a":[{"id":"é<&>","provider":""}]}}`, true},
		{`{"duration":2.5,"time_to_first_token":0.125,"cache_read_tokens":1,"cache_write_tokens":2}`, true},
		// Kept in Extra or read otherwise by the general path:
		{`{"input_tokens":0}`, false},
		{`{"input_tokens":12.0}`, false},
		{`{"input_tokens":"12"}`, false},
		{`{"input_tokens":1e2}`, false},
		{`{"cost":2.0}`, false},
		{`{"cost":0.1000000000000000055511151231257827}`, false},
		{`{"audio_tokens":4}`, false},
		{`{"details":{}}`, false},
		{`{"details":null}`, false},
		{`{"details":{"model":null}}`, false},
		{`{"details":{"model":[{"id":"m","provider":"p","provider_metrics":{}}]}}`, false},
		{`{"details":{"model":[{"id":null,"provider":"p"}]}}`, false},
		{`{"details":{"model":[{"id":"a\"b","provider":"p"}]}}`, false},
		{`{"details":{"mod\u0065l":[{"id":"m","provider":"p"}]}}`, false},
		{`{"details":{"model":[{"id":"m","provider":"p"}]},"details":{"x":[]}}`, false},
		{`{"details":{"model":[],"model":[{"id":"m","provider":"p"}]}}`, false},
		{`{"details":{"model":[1]}}`, false},
		{`{"Input_Tokens":3}`, false},
		{`null`, false},
		{`[1]`, false},
	} {
		if got, _ := samePlainAsGeneral(t, []byte(c.data)); got != c.plain {
			t.Errorf("%s: plain read %v, want %v", c.data, got, c.plain)
		}
	}
	// What Add builds is written on the plain path.
	var sm SessionMetrics
	sm.AddRun(&Metrics{Usage: tokens(5, 7), Details: map[string][]ModelMetrics{
		"model": {{ID: "m", Provider: "p", Usage: tokens(5, 7)}}, "output_model": {{ID: "o", Provider: "p"}}}})
	b, err := sm.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, enc := samePlainAsGeneral(t, b); !enc || !plainSessionMetricsBytes(b) {
		t.Fatalf("%s: not on the plain paths", b)
	}
}

func tokens(in, out int) model.Usage {
	return model.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
}

func plainSessionMetricsBytes(b []byte) bool {
	_, ok := decodePlainSessionMetrics(b)
	return ok
}

// FuzzPlainSessionMetrics: whatever the plain reader or writer takes, it
// reads or writes as the general path does.
func FuzzPlainSessionMetrics(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"input_tokens":12,"details":{"model":[{"id":"m","provider":"p","input_tokens":12}]}}`,
		`{"cost":0.5,"details":{"a":[],"b":[{"id":"x","provider":"y","duration":1.25}]}}`,
		`{"input_tokens":0}`, `{"details":{"model":[{"id":"m","provider":"p","x":1}]}}`,
		`{"cost":0.1,"details":{"model":[{"id":"m","provider":"p","cost":1e-7}]}}`, `{"details":{"model":[{"id":"m","provider":"p","input_tokens":-0}]}}`,
		`{"cost":1E2,"output_tokens":9223372036854775807,"duration":-0.0,"time_to_first_token":2.5E-1}`,
		`{"details":{"model":[{"id":"\u00e9","provider":"p"},{"id":"m","id":"n","provider":null}]},"details":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		samePlainAsGeneral(t, data)
	})
}
