package eval

import (
	"errors"
	"testing"
)

// FuzzParseSuite checks that any file either parses into cases that name a
// type, a target and an input (not a workflow for reliability), or fails
// with ErrInvalid; it never panics.
func FuzzParseSuite(f *testing.F) {
	f.Add([]byte("judge_model: scripted:j.yaml\ncases:\n  - {name: a, type: accuracy, agent: x, input: hi, expected_output: y}\n"))
	f.Add([]byte("cases:\n  - {name: b, type: performance, team: t, input: hi, max_p95_run_time: 2s}\n"))
	f.Add([]byte("cases:\n  - {name: c, type: reliability, team: t, input: hi, expected_tool_call_arguments: {t: {a: [1]}}}\n"))
	f.Add([]byte("cases: [{}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSuite(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		for _, c := range s.Cases {
			if c.Name == "" || c.Type == "" || c.Input == "" || c.Agent+c.Team+c.Workflow == "" {
				t.Fatalf("accepted incomplete case %+v", c)
			}
			if c.Type == TypeReliability && c.Workflow != "" {
				t.Fatalf("accepted a reliability case of a workflow %+v", c)
			}
		}
	})
}

func TestParseSuite_Durations(t *testing.T) {
	s, err := ParseSuite([]byte("cases:\n  - {name: b, type: performance, agent: a, input: hi, max_p95_run_time: 1500ms, max_avg_run_time: 2s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Cases[0]; c.MaxP95RunTime.Milliseconds() != 1500 || c.MaxAvgRunTime.Seconds() != 2 {
		t.Errorf("durations %v %v", c.MaxP95RunTime, c.MaxAvgRunTime)
	}
}

// Values no result can meet, or that cannot be stored (JSON has no NaN or
// infinity), are refused when the file is read, before any case runs.
func TestParseSuite_RefusesValuesThatCannotHold(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]string{
		"min_score nan":       "{name: a, type: accuracy, agent: x, input: hi, expected_output: y, min_score: .nan}",
		"min_score above 10":  "{name: a, type: accuracy, agent: x, input: hi, expected_output: y, min_score: 11}",
		"min_score negative":  "{name: a, type: accuracy, agent: x, input: hi, expected_output: y, min_score: -1}",
		"negative duration":   "{name: b, type: performance, agent: x, input: hi, max_p95_run_time: -1s}",
		"memory nan":          "{name: b, type: performance, agent: x, input: hi, max_avg_memory_mib: .nan}",
		"memory negative":     "{name: b, type: performance, agent: x, input: hi, max_avg_memory_mib: -2}",
		"argument nan":        "{name: c, type: reliability, agent: x, input: hi, expected_tool_call_arguments: {t: {a: .nan}}}",
		"nested argument inf": "{name: c, type: reliability, agent: x, input: hi, expected_tool_call_arguments: {t: {a: [1, {b: -.inf}]}}}",
		"threshold above 10":  "{name: d, type: agent_as_judge, agent: x, input: hi, criteria: polite, scoring: numeric, threshold: 11}",
		"threshold negative":  "{name: d, type: agent_as_judge, agent: x, input: hi, criteria: polite, scoring: numeric, threshold: -1}",
		"unknown scoring":     "{name: d, type: agent_as_judge, agent: x, input: hi, criteria: polite, scoring: numerical}",
		"workflow tool calls": "{name: c, type: reliability, workflow: w, input: hi, expected_tool_calls: [multiply]}",
	} {
		_, err := ParseSuite([]byte("judge_model: j\ncases:\n  - " + c + "\n"))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

// A file of several YAML documents is not one suite: the cases after the
// first document would never run, silently.
func TestParseSuite_RefusesASecondDocument(t *testing.T) {
	t.Parallel()
	for _, data := range []string{
		"cases:\n  - {name: a, type: performance, agent: x, input: hi}\n---\ncases:\n  - {name: b, type: performance, agent: x, input: hi}\n",
		"cases:\n  - {name: a, type: performance, agent: x, input: hi}\n---\n",
		"cases:\n  - {name: a, type: performance, agent: x, input: hi}\n---\n: [\n",
	} {
		if s, err := ParseSuite([]byte(data)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: err = %v (suite %+v), want ErrInvalid", data, err, s)
		}
	}
}
