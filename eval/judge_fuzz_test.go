package eval

import (
	"errors"
	"testing"
)

// FuzzParseVerdict checks that any judge answer is, for each kind of
// judge, either a verdict (a score in 1–10 for the scoring ones) or
// ErrJudge; it never panics.
func FuzzParseVerdict(f *testing.F) {
	f.Add(`{"accuracy_score": 8, "accuracy_reason": "ok"}`)
	f.Add("```json\n{\"score\": \"9\", \"reason\": \"r\"}\n```")
	f.Add(`I weighed {a}. {"passed": true, "reason": "x"} }`)
	f.Add(`{"verdict": {"accuracy_score": 1e1}}`)
	f.Add(`{"accuracy_score": 8.5}`)
	f.Add(`{{{{"score":`)
	f.Fuzz(func(t *testing.T, answer string) {
		for _, kind := range []verdictKind{accuracyVerdict, numericVerdict, binaryVerdict} {
			v, err := parseVerdict(answer, kind)
			if err != nil {
				if !errors.Is(err, ErrJudge) {
					t.Fatalf("%s: error %v is not ErrJudge", kind, err)
				}
				continue
			}
			if kind != binaryVerdict && (v.Score < 1 || v.Score > 10) {
				t.Fatalf("%s: accepted score %d", kind, v.Score)
			}
		}
	})
}
