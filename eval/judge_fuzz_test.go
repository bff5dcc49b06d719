package eval

import (
	"errors"
	"testing"
)

// FuzzParseVerdict checks that any judge answer is either a verdict with
// its scores in 1–10 or ErrJudge; it never panics.
func FuzzParseVerdict(f *testing.F) {
	f.Add(`{"accuracy_score": 8, "accuracy_reason": "ok"}`)
	f.Add("```json\n{\"score\": \"9\", \"reason\": \"r\"}\n```")
	f.Add(`I weighed {a}. {"passed": true, "reason": "x"} }`)
	f.Add(`{"verdict": {"accuracy_score": 1e1}}`)
	f.Add(`{"accuracy_score": 8.5}`)
	f.Add(`{{{{"score":`)
	f.Fuzz(func(t *testing.T, answer string) {
		v, err := parseVerdict(answer)
		if err != nil {
			if !errors.Is(err, ErrJudge) {
				t.Fatalf("error %v is not ErrJudge", err)
			}
			return
		}
		for _, p := range []*wholeNumber{v.AccuracyScore, v.Score} {
			if p != nil && (*p < 1 || *p > 10) {
				t.Fatalf("accepted score %d", *p)
			}
		}
	})
}
