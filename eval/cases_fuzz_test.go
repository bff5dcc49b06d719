package eval

import (
	"errors"
	"strings"
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
			if key := c.inapplicable(); key != "" {
				t.Fatalf("accepted %s on a %s case", key, c.Type)
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

// A setting the case's type does not use is refused when the file is read,
// as POST /eval-runs refuses it, rather than ignored: a limit or a
// threshold put on the wrong case (min_score on an agent_as_judge case
// meant as its threshold, a time limit on an accuracy case) made the case
// pass on a check it never made.
func TestParseSuite_RefusesSettingsItsTypeDoesNotUse(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ yaml, key string }{
		"min_score of a judge":        {"{name: d, type: agent_as_judge, agent: x, input: hi, criteria: polite, min_score: 9}", "min_score"},
		"time limit of accuracy":      {"{name: a, type: accuracy, agent: x, input: hi, expected_output: y, max_p95_run_time: 2s}", "max_p95_run_time"},
		"memory limit of a judge":     {"{name: d, type: agent_as_judge, agent: x, input: hi, criteria: polite, max_avg_memory_mib: 5}", "max_avg_memory_mib"},
		"tools of accuracy":           {"{name: a, type: accuracy, agent: x, input: hi, expected_output: y, forbidden_tool_calls: [shell]}", "forbidden_tool_calls"},
		"expected output of a judge":  {"{name: d, type: agent_as_judge, agent: x, input: hi, criteria: polite, expected_output: y}", "expected_output"},
		"criteria of accuracy":        {"{name: a, type: accuracy, agent: x, input: hi, expected_output: y, criteria: polite}", "criteria"},
		"iterations of reliability":   {"{name: c, type: reliability, agent: x, input: hi, expected_tool_calls: [t], iterations: 3}", "iterations"},
		"judge of performance":        {"{name: b, type: performance, agent: x, input: hi, judge_model: j}", "judge_model"},
		"warmups of accuracy":         {"{name: a, type: accuracy, agent: x, input: hi, expected_output: y, warmups: 2}", "warmups"},
		"threshold of performance":    {"{name: b, type: performance, agent: x, input: hi, threshold: 8}", "threshold"},
		"scoring of reliability":      {"{name: c, type: reliability, agent: x, input: hi, expected_tool_calls: [t], scoring: numeric}", "scoring"},
		"arguments of performance":    {"{name: b, type: performance, agent: x, input: hi, expected_tool_call_arguments: {t: {a: 1}}}", "expected_tool_call_arguments"},
		"additional tools of a judge": {"{name: d, type: agent_as_judge, agent: x, input: hi, criteria: polite, allow_additional_tool_calls: true}", "allow_additional_tool_calls"},
		"context of a judge":          {"{name: d, type: agent_as_judge, agent: x, input: hi, criteria: polite, additional_context: c}", "additional_context"},
	} {
		_, err := ParseSuite([]byte("judge_model: j\ncases:\n  - " + c.yaml + "\n"))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: err = %v, want ErrInvalid naming %s", name, err, c.key)
		}
	}
	// every setting of its own type, and the file's judge, are accepted
	for _, c := range []string{
		"{name: a, type: accuracy, agent: x, input: hi, expected_output: y, min_score: 8, iterations: 2, judge_model: j, additional_guidelines: g, additional_context: c}",
		"{name: d, type: agent_as_judge, agent: x, input: hi, criteria: polite, scoring: numeric, threshold: 8, iterations: 2, judge_model: j, additional_guidelines: g}",
		"{name: b, type: performance, agent: x, input: hi, warmups: 0, iterations: 5, max_avg_run_time: 1s, max_p95_run_time: 2s, max_avg_memory_mib: 3}",
		"{name: c, type: reliability, agent: x, input: hi, expected_tool_calls: [t], forbidden_tool_calls: [s], allow_additional_tool_calls: true, expected_tool_call_arguments: {t: {a: 1}}}",
	} {
		if _, err := ParseSuite([]byte("judge_model: j\ncases:\n  - " + c + "\n")); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
}

// A reliability case that names no tool to expect or forbid and no
// arguments passes whatever its target calls: a check that cannot fail is
// refused. Any one of the three makes a case.
func TestParseSuite_RefusesAReliabilityCaseThatChecksNothing(t *testing.T) {
	t.Parallel()
	_, err := ParseSuite([]byte("cases:\n  - {name: c, type: reliability, agent: x, input: hi}\n"))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "expected_tool_calls, forbidden_tool_calls or expected_tool_call_arguments") {
		t.Errorf("err = %v, want ErrInvalid naming what the case needs", err)
	}
	for _, c := range []string{"expected_tool_calls: []", "forbidden_tool_calls: [shell]", "expected_tool_call_arguments: {t: {a: 1}}"} {
		if _, err := ParseSuite([]byte("cases:\n  - {name: c, type: reliability, agent: x, input: hi, " + c + "}\n")); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
}
