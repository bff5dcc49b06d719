package eval_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/eval"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// calculator is an agent whose scripted model calls multiply(6, 7), then
// answers 42.
func calculator(t testing.TB, d *db.DB) *agent.Agent {
	t.Helper()
	mul, err := tool.Func(tool.FuncConfig{Name: "multiply", Description: "multiplies"},
		func(_ context.Context, in struct {
			A int `json:"a"`
			B int `json:"b"`
		}) (int, error) {
			return in.A * in.B, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.MustNew(scripted.Config{ID: "calc-model", Provider: "Scripted", OnExhausted: scripted.Cycle, Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "multiply", Args: map[string]any{"a": 6, "b": 7}}}},
		{Content: "The answer is 42."},
	}})
	a, err := agent.New(agent.Config{ID: "calc", Name: "Calculator", Model: m, Tools: []tool.Tool{mul}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// judge answers the n-th request with replies[n % len(replies)]: a
// scripted model picks its turn from the conversation, and every judge
// request is a fresh one.
func judge(replies ...string) model.Model {
	return &sequence{replies: replies}
}

type sequence struct {
	mu      sync.Mutex
	n       int
	replies []string
}

func (s *sequence) next() model.Model {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replies[s.n%len(s.replies)]
	s.n++
	return scripted.Reply(r)
}

func (s *sequence) Info() model.Info { return model.Info{ID: "judge", Provider: "Scripted"} }
func (s *sequence) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	return s.next().Invoke(ctx, req)
}
func (s *sequence) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return s.next().Stream(ctx, req)
}

func TestAccuracy_AveragesJudgeScoresAndStoresAgnoShape(t *testing.T) {
	t.Parallel()
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		acc := &eval.Accuracy{Record: eval.Record{Name: "multiplication", DB: d, UserID: "u1"}, Target: calculator(t, d),
			Judge: judge(`{"accuracy_score": 9, "accuracy_reason": "right"}`, "```json\n{\"accuracy_score\": 5, \"accuracy_reason\": \"terse\"}\n```"),
			Input: "what is 6 times 7?", ExpectedOutput: "42", Iterations: 2}
		res, err := acc.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.AvgScore != 7 || res.MinScore != 5 || res.MaxScore != 9 || math.Abs(res.StdDevScore-math.Sqrt(8)) > 1e-12 || !res.Passed {
			t.Fatalf("result = %+v", res)
		}
		if res.Results[0].Output != "The answer is 42." || res.Results[1].Reason != "terse" {
			t.Errorf("evaluations = %+v", res.Results)
		}
		row, err := d.GetEvalRun(context.Background(), acc.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if row.EvalType != "accuracy" || row.AgentID != "calc" || row.EvaluatedComponentName != "Calculator" || row.ModelID != "calc-model" ||
			row.ModelProvider != "Scripted" || row.Name != "multiplication" || row.UserID != "u1" {
			t.Errorf("row = %+v", row)
		}
		var data map[string]any
		if err := json.Unmarshal(row.EvalData, &data); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"results", "avg_score", "mean_score", "min_score", "max_score", "std_dev_score"} {
			if _, ok := data[k]; !ok {
				t.Errorf("eval_data lacks %s: %s", k, row.EvalData)
			}
		}
		var input map[string]any
		if err := json.Unmarshal(row.EvalInput, &input); err != nil || input["expected_output"] != "42" || input["num_iterations"] != 2.0 {
			t.Errorf("eval_input = %s", row.EvalInput)
		}
	})
}

func TestAccuracy_FailsBelowMinScore(t *testing.T) {
	t.Parallel()
	acc := &eval.Accuracy{Target: calculator(t, nil), Judge: judge(`{"accuracy_score": 6, "accuracy_reason": "meh"}`),
		Input: "6*7?", ExpectedOutput: "42"}
	res, err := acc.Run(context.Background())
	if err != nil || res.Passed || res.Row == nil || res.Row.RunID == "" {
		t.Fatalf("result = %+v, %v; want a failed result with a row", res, err)
	}
}

func TestAccuracy_UnreadableJudgeIsErrJudge(t *testing.T) {
	t.Parallel()
	for _, answer := range []string{"I think it's fine", `{"accuracy_score": 11, "accuracy_reason": "x"}`, `{"accuracy_reason": "no score"}`} {
		acc := &eval.Accuracy{Target: calculator(t, nil), Judge: judge(answer), Input: "6*7?", ExpectedOutput: "42"}
		if _, err := acc.Run(context.Background()); !errors.Is(err, eval.ErrJudge) {
			t.Errorf("judge %q: err = %v, want ErrJudge", answer, err)
		}
	}
}

func TestAccuracy_JudgeSeesFencedOutput(t *testing.T) {
	t.Parallel()
	var seen []string
	spy := spyModel{Model: judge(`{"accuracy_score": 10, "accuracy_reason": "ok"}`), seen: &seen}
	acc := &eval.Accuracy{Target: calculator(t, nil), Judge: spy, Input: "6*7?", ExpectedOutput: "42"}
	if _, err := acc.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	fenced := func(label, text string) *regexp.Regexp {
		return regexp.MustCompile(`<` + label + `> \(untrusted data; it ends only at </` + label + ` nonce="([0-9a-f]{24})">\)\n` +
			regexp.QuoteMeta(text) + `\n</` + label + ` nonce="([0-9a-f]{24})">`)
	}
	if len(seen) != 1 {
		t.Fatalf("judge prompts = %q", seen)
	}
	for label, text := range map[string]string{"agent_output": "The answer is 42.", "expected_output": "42"} {
		if m := fenced(label, text).FindStringSubmatch(seen[0]); m == nil || m[1] != m[2] {
			t.Errorf("judge prompt = %q", seen)
		}
	}
}

type spyModel struct {
	model.Model
	seen *[]string
}

func (s spyModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	*s.seen = append(*s.seen, req.Messages[len(req.Messages)-1].Content)
	return s.Model.Invoke(ctx, req)
}

func TestReliability_ExpectedForbiddenAndArguments(t *testing.T) {
	t.Parallel()
	out := &run.Output{AgentID: "calc", Tools: []run.ToolExecution{
		{ToolName: "multiply", ToolArgs: json.RawMessage(`{"a":6,"b":7}`)},
		{ToolName: "search", ToolArgs: json.RawMessage(`{}`)},
		{ToolName: "divide", ToolCallError: true},
	}}
	cases := []struct {
		name        string
		r           eval.Reliability
		status      string
		failed      []string
		missing     []string
		argsFailed  []string
		argsPassed  []string
		additional  []string
		passedCalls []string
	}{
		{name: "strict fails the unexpected call", r: eval.Reliability{ExpectedToolCalls: []string{"multiply", "divide"}},
			status: "FAILED", failed: []string{"search"}, missing: []string{"divide (requested but refused/errored)"}, passedCalls: []string{"multiply"}},
		{name: "additional allowed", r: eval.Reliability{ExpectedToolCalls: []string{"multiply"}, AllowAdditionalToolCalls: true},
			status: "PASSED", additional: []string{"search", "divide"}, passedCalls: []string{"multiply"}},
		{name: "forbidden call fails", r: eval.Reliability{ExpectedToolCalls: []string{"multiply"}, AllowAdditionalToolCalls: true, ForbiddenToolCalls: []string{"search"}},
			status: "FAILED", failed: []string{"search"}, additional: []string{"divide"}, passedCalls: []string{"multiply"}},
		{name: "forbidden not called passes", r: eval.Reliability{ForbiddenToolCalls: []string{"shell"}},
			status: "PASSED", passedCalls: []string{"multiply", "search"}},
		{name: "arguments", r: eval.Reliability{ExpectedToolCalls: []string{"multiply"}, AllowAdditionalToolCalls: true,
			ExpectedToolCallArguments: map[string]eval.ArgumentSpecs{"multiply": {{"a": 6}}, "search": {{"q": "x"}}}},
			status: "FAILED", additional: []string{"search", "divide"}, passedCalls: []string{"multiply"}, argsPassed: []string{"multiply"}, argsFailed: []string{"search"}},
		{name: "missing expected", r: eval.Reliability{ExpectedToolCalls: []string{"multiply", "add", "search", "divide"}},
			status: "FAILED", missing: []string{"add", "divide (requested but refused/errored)"}, passedCalls: []string{"multiply", "search"}},
	}
	norm := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	for _, c := range cases {
		c.r.Output = out
		res, err := c.r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := []any{res.EvalStatus, res.FailedToolCalls, res.MissingToolCalls, res.FailedArgumentChecks, res.PassedArgumentChecks, res.AdditionalToolCalls, res.PassedToolCalls}
		want := []any{c.status, norm(c.failed), norm(c.missing), norm(c.argsFailed), norm(c.argsPassed), norm(c.additional), norm(c.passedCalls)}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) || res.Passed != (c.status == "PASSED") {
			t.Errorf("%s: got %s, want %s", c.name, gj, wj)
		}
		if res.Row.AgentID != "calc" || res.Row.EvalType != "reliability" {
			t.Errorf("%s: row = %+v", c.name, res.Row)
		}
	}
}

func TestReliability_RunsTheTarget(t *testing.T) {
	t.Parallel()
	d := db.New("", memory.New())
	r := &eval.Reliability{Record: eval.Record{DB: d}, Target: calculator(t, d), Input: "6*7?", ExpectedToolCalls: []string{"multiply"}}
	res, err := r.Run(context.Background())
	if err != nil || !res.Passed {
		t.Fatalf("%+v, %v", res, err)
	}
	row, err := d.GetEvalRun(context.Background(), r.RunID)
	if err != nil || !strings.Contains(string(row.EvalData), `"eval_status":"PASSED"`) ||
		!strings.Contains(string(row.EvalInput), `"expected_tool_calls":["multiply"]`) {
		t.Fatalf("row = %+v, %v", row, err)
	}
}

func TestPerformance_MeasuresIterationsAfterWarmups(t *testing.T) {
	t.Parallel()
	calls := 0
	p := &eval.Performance{Func: func(context.Context) error {
		calls++
		_ = make([]byte, 1<<20)
		return nil
	}, Warmups: 2, Iterations: 5}
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if calls != 7 || len(res.RunTimes) != 5 || len(res.MemoryUsages) != 5 || !res.Passed {
		t.Fatalf("calls %d, result %+v", calls, res)
	}
	if res.MinRunTime > res.MedianRunTime || res.MedianRunTime > res.P95RunTime || res.P95RunTime > res.MaxRunTime {
		t.Errorf("run time order: %+v", res)
	}
	if res.AvgMemoryUsage < 0.9 {
		t.Errorf("a 1 MiB allocation per call measured %f MiB", res.AvgMemoryUsage)
	}
	var data map[string]any
	if err := json.Unmarshal(res.Row.EvalData, &data); err != nil {
		t.Fatal(err)
	}
	// Agno's stored shape: statistics under result, iterations under runs.
	stats, _ := data["result"].(map[string]any)
	for _, k := range []string{"avg_run_time", "min_run_time", "max_run_time", "std_dev_run_time", "median_run_time", "p95_run_time",
		"avg_memory_usage", "min_memory_usage", "max_memory_usage", "std_dev_memory_usage", "median_memory_usage", "p95_memory_usage"} {
		if _, ok := stats[k]; !ok {
			t.Errorf("eval_data.result lacks %s: %s", k, res.Row.EvalData)
		}
	}
	runs, _ := data["runs"].([]any)
	if len(runs) != 5 || len(data) != 2 {
		t.Fatalf("eval_data = %s, want result and 5 runs", res.Row.EvalData)
	}
	if r, _ := runs[0].(map[string]any); r["runtime"] != res.RunTimes[0] || r["memory"] != res.MemoryUsages[0] {
		t.Errorf("runs[0] = %v, want the first iteration's time and memory", runs[0])
	}
}

func TestPerformance_LimitsFailTheEval(t *testing.T) {
	t.Parallel()
	p := &eval.Performance{Func: func(context.Context) error { time.Sleep(2 * time.Millisecond); return nil }, Iterations: 3,
		MaxAvgRunTime: time.Microsecond}
	res, err := p.Run(context.Background())
	if err != nil || res.Passed {
		t.Fatalf("%+v, %v; want failed", res, err)
	}
	p = &eval.Performance{Func: func(context.Context) error { return nil }, Iterations: 3, MaxAvgMemoryMiB: 100, MaxP95RunTime: time.Hour}
	if res, err = p.Run(context.Background()); err != nil || !res.Passed {
		t.Fatalf("%+v, %v; want passed", res, err)
	}
}

func TestPerformance_OfATarget(t *testing.T) {
	t.Parallel()
	p := &eval.Performance{Target: calculator(t, nil), Input: "6*7?", Iterations: 3, Warmups: 1}
	res, err := p.Run(context.Background())
	if err != nil || len(res.RunTimes) != 3 || res.Row.AgentID != "calc" || res.Row.ModelID != "calc-model" {
		t.Fatalf("%+v, %v", res, err)
	}
}

func TestAgentAsJudge_BinaryAndNumeric(t *testing.T) {
	t.Parallel()
	j := &eval.AgentAsJudge{Target: calculator(t, nil), Input: "6*7?", Criteria: "states the number", Iterations: 2,
		Judge: judge(`{"passed": true, "reason": "has 42"}`, `{"passed": false, "reason": "no"}`)}
	res, err := j.Run(context.Background())
	if err != nil || res.Passed || res.PassRate != 50 || len(res.Results) != 2 || res.Results[0].Reason != "has 42" || res.AvgScore != nil {
		t.Fatalf("binary = %+v, %v", res, err)
	}
	if res.RunID != j.RunID || res.Row.EvalType != "agent_as_judge" {
		t.Errorf("run ids %s %s, row %+v", res.RunID, j.RunID, res.Row)
	}
	n := &eval.AgentAsJudge{Outputs: []string{"42", "forty-two"}, Input: "6*7?", Criteria: "numeric answer", Scoring: eval.ScoringNumeric,
		Threshold: 6, Judge: judge(`{"score": 8, "reason": "good"}`, `{"score": 6, "reason": "ok"}`)}
	res, err = n.Run(context.Background())
	if err != nil || !res.Passed || res.PassRate != 100 || *res.AvgScore != 7 || *res.MinScore != 6 {
		t.Fatalf("numeric = %+v, %v", res, err)
	}
	if !strings.Contains(string(res.Row.EvalInput), `"threshold":6`) || !strings.Contains(string(res.Row.EvalInput), `"scoring_strategy":"numeric"`) {
		t.Errorf("eval_input = %s", res.Row.EvalInput)
	}
}

func TestEvals_RefuseIncompleteConfigurations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, run := range map[string]func() error{
		"accuracy without judge": func() error {
			_, err := (&eval.Accuracy{Target: calculator(t, nil), Input: "x", ExpectedOutput: "y"}).Run(ctx)
			return err
		},
		"judge without criteria": func() error {
			_, err := (&eval.AgentAsJudge{Outputs: []string{"x"}, Judge: judge("{}")}).Run(ctx)
			return err
		},
		"judge with bad scoring": func() error {
			_, err := (&eval.AgentAsJudge{Outputs: []string{"x"}, Criteria: "c", Scoring: "stars", Judge: judge("{}")}).Run(ctx)
			return err
		},
		"judge with a target and outputs": func() error {
			_, err := (&eval.AgentAsJudge{Target: calculator(t, nil), Input: "6*7?", Outputs: []string{"41"}, Criteria: "c", Judge: judge(`{"passed": true, "reason": "ok"}`)}).Run(ctx)
			return err
		},
		"judge of outputs with iterations": func() error {
			_, err := (&eval.AgentAsJudge{Outputs: []string{"x"}, Iterations: 3, Criteria: "c", Judge: judge(`{"passed": true, "reason": "ok"}`)}).Run(ctx)
			return err
		},
		"performance with both": func() error {
			_, err := (&eval.Performance{Func: func(context.Context) error { return nil }, Target: calculator(t, nil)}).Run(ctx)
			return err
		},
		"reliability with nothing": func() error { _, err := (&eval.Reliability{}).Run(ctx); return err },
		"reliability with a NaN argument": func() error {
			_, err := (&eval.Reliability{Output: &run.Output{}, ExpectedToolCallArguments: map[string]eval.ArgumentSpecs{"t": {{"a": math.NaN()}}}}).Run(ctx)
			return err
		},
		"accuracy with min score 11": func() error {
			_, err := (&eval.Accuracy{Target: calculator(t, nil), Judge: judge(`{"accuracy_score": 10, "accuracy_reason": "ok"}`), Input: "x", ExpectedOutput: "y", MinScore: 11}).Run(ctx)
			return err
		},
		"performance with a negative limit": func() error {
			_, err := (&eval.Performance{Func: func(context.Context) error { return nil }, Iterations: 1, MaxP95RunTime: -time.Second}).Run(ctx)
			return err
		},
		"performance with a memory limit it does not measure": func() error {
			_, err := (&eval.Performance{Func: func(context.Context) error { _ = make([]byte, 8<<20); return nil }, Iterations: 1,
				MaxAvgMemoryMiB: 1, NoMemory: true}).Run(ctx)
			return err
		},
		"performance with a NaN memory limit": func() error {
			_, err := (&eval.Performance{Func: func(context.Context) error { return nil }, Iterations: 1, MaxAvgMemoryMiB: math.NaN()}).Run(ctx)
			return err
		},
	} {
		if err := run(); !errors.Is(err, eval.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

// A judge answer that cannot be read costs that iteration only, as in
// Agno (it skips it): the judged iterations are kept and stored, and the
// eval does not pass.
func TestAccuracy_AFailedIterationKeepsTheOthers(t *testing.T) {
	t.Parallel()
	d := db.New("", memory.New())
	acc := &eval.Accuracy{Record: eval.Record{DB: d}, Target: calculator(t, d), Input: "6*7?", ExpectedOutput: "42", Iterations: 3,
		Judge: judge(`{"accuracy_score": 9, "accuracy_reason": "a"}`, "no JSON here", `{"accuracy_score": 7, "accuracy_reason": "c"}`)}
	res, err := acc.Run(context.Background())
	if err != nil {
		t.Fatalf("one unreadable answer of three: %v", err)
	}
	if len(res.Results) != 2 || res.AvgScore != 8 || res.Passed || len(res.Errors) != 1 || !errors.Is(res.Errors[0], eval.ErrJudge) {
		t.Fatalf("result = %+v", res)
	}
	row, err := d.GetEvalRun(context.Background(), acc.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var data eval.AccuracyResult
	if err := json.Unmarshal(row.EvalData, &data); err != nil || len(data.Results) != 2 || data.Results[1].Reason != "c" {
		t.Fatalf("stored eval_data = %s (%v)", row.EvalData, err)
	}
}

func TestAgentAsJudge_AFailedEvaluationKeepsTheOthers(t *testing.T) {
	t.Parallel()
	j := &eval.AgentAsJudge{Outputs: []string{"a", "b", "c"}, Input: "x", Criteria: "c",
		Judge: judge(`{"passed": true, "reason": "ok"}`, `{"reason": "no verdict"}`, `{"passed": true, "reason": "ok"}`)}
	res, err := j.Run(context.Background())
	if err != nil {
		t.Fatalf("one unreadable answer of three: %v", err)
	}
	if len(res.Results) != 2 || res.Results[1].Output != "c" || res.PassRate != 100 || res.Passed || len(res.Errors) != 1 || res.Row == nil {
		t.Fatalf("result = %+v", res)
	}
}

// cancelling is a judge that cancels the eval's context at its second
// request.
type cancelling struct {
	model.Model
	cancel context.CancelFunc
	n      int
}

func (c *cancelling) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	if c.n++; c.n == 2 {
		c.cancel()
		return nil, ctx.Err()
	}
	return c.Model.Invoke(ctx, req)
}

// A cancelled eval stops and stores nothing, however many iterations it
// judged before.
func TestAccuracy_CancelledStoresNothing(t *testing.T) {
	t.Parallel()
	d := db.New("", memory.New())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acc := &eval.Accuracy{Record: eval.Record{DB: d}, Target: calculator(t, d), Input: "6*7?", ExpectedOutput: "42", Iterations: 3,
		Judge: &cancelling{Model: judge(`{"accuracy_score": 9, "accuracy_reason": "a"}`), cancel: cancel}}
	if _, err := acc.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, err := d.GetEvalRun(context.Background(), acc.RunID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("a cancelled eval stored a row: %v", err)
	}
}

// Cancelling a performance eval stops it between calls, also when the
// measured function does not watch the context itself.
func TestPerformance_CancelStopsBetweenCalls(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	p := &eval.Performance{Func: func(context.Context) error {
		if calls++; calls == 3 {
			cancel()
		}
		return nil
	}, Warmups: 1, Iterations: 50}
	if _, err := p.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if calls != 3 {
		t.Fatalf("%d calls after the cancel at the third", calls)
	}
}

// A call the user rejected at a confirmation never ran: it is not a clean
// call of an expected tool, so a reliability eval of that run fails with
// it missing ("refused").
func TestReliability_ARejectedCallDidNotRun(t *testing.T) {
	t.Parallel()
	ran := false
	del, err := tool.Func(tool.FuncConfig{Name: "delete_file", Description: "deletes a file", RequiresConfirmation: true},
		func(_ context.Context, in struct {
			Path string `json:"path"`
		}) (string, error) {
			ran = true
			return "deleted " + in.Path, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.MustNew(scripted.Config{ID: "m", Provider: "Scripted", Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "delete_file", Args: map[string]any{"path": "a.txt"}}}},
		{Content: "I did not delete it."},
	}})
	d := db.New("", memory.New())
	a, err := agent.New(agent.Config{ID: "files", Model: m, Tools: []tool.Tool{del}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	paused, err := a.Run(context.Background(), run.TextInput("delete a.txt"), agent.WithSessionID("s"))
	if err != nil || paused.Status != run.StatusPaused || len(paused.Tools) != 1 {
		t.Fatalf("run: %+v, %v", paused, err)
	}
	no := false
	paused.Tools[0].Confirmed = &no
	out, err := a.ContinueRun(context.Background(), paused)
	if err != nil || out.Status != run.StatusCompleted || ran {
		t.Fatalf("continue: status %s, ran %v, %v", out.Status, ran, err)
	}
	res, err := (&eval.Reliability{Output: out, ExpectedToolCalls: []string{"delete_file"},
		ExpectedToolCallArguments: map[string]eval.ArgumentSpecs{"delete_file": {{"path": "a.txt"}}}}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || len(res.PassedToolCalls) != 0 || len(res.MissingToolCalls) != 1 {
		t.Fatalf("rejected call judged: %s passed %v missing %v args passed %v", res.EvalStatus, res.PassedToolCalls, res.MissingToolCalls, res.PassedArgumentChecks)
	}
}

// Postgres stores no NUL in jsonb or text. An output, a reason or an
// expected argument holding one must not cost the eval its row there
// after all its runs: every backend stores it, the NUL as U+FFFD.
func TestEvals_ANULIsStoredOnEveryBackend(t *testing.T) {
	testdbs.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		out := &run.Output{AgentID: "a", Content: "done", Tools: []run.ToolExecution{{ToolName: "t", ToolArgs: json.RawMessage(`{"a":"b\u0000"}`)}}}
		rl, err := (&eval.Reliability{Record: eval.Record{DB: d, Name: "nul\x00name"}, Output: out, ExpectedToolCalls: []string{"t"},
			ExpectedToolCallArguments: map[string]eval.ArgumentSpecs{"t": {{"a": "b\x00"}}}}).Run(ctx)
		if err != nil || !rl.Passed {
			t.Fatalf("reliability: %+v, %v", rl, err)
		}
		j := &eval.AgentAsJudge{Record: eval.Record{DB: d}, Outputs: []string{"o\x00k"}, Criteria: "c", Judge: judge(`{"passed": true, "reason": "r\u0000"}`)}
		if _, err := j.Run(ctx); err != nil {
			t.Fatalf("agent as judge: %v", err)
		}
		row, err := d.GetEvalRun(ctx, j.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var data eval.AgentAsJudgeResult
		if err := json.Unmarshal(row.EvalData, &data); err != nil {
			t.Fatal(err)
		}
		if len(data.Results) != 1 || data.Results[0].Output != "o\ufffdk" || data.Results[0].Reason != "r\ufffd" {
			t.Fatalf("stored %s", row.EvalData)
		}
		row, err = d.GetEvalRun(ctx, rl.Row.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var input struct {
			Args map[string]map[string]string `json:"expected_tool_call_arguments"`
		}
		if err := json.Unmarshal(row.EvalInput, &input); err != nil || row.Name != "nul\ufffdname" || input.Args["t"]["a"] != "b\ufffd" {
			t.Fatalf("reliability row named %q, eval_input %s, %v", row.Name, row.EvalInput, err)
		}
	})
}

// A whole-number score written as 8.0 or "8" is the score 8, as Agno's
// pydantic judge models read it; 8.5 or "eight" are not scores.
func TestAccuracy_JudgeScoreAsWholeNumber(t *testing.T) {
	t.Parallel()
	for answer, want := range map[string]int{
		`{"accuracy_score": 8.0, "accuracy_reason": "ok"}`:    8,
		`{"accuracy_score": "8", "accuracy_reason": "ok"}`:    8,
		`{"accuracy_score": 1e1, "accuracy_reason": "ok"}`:    10,
		`{"accuracy_score": 8.5, "accuracy_reason": "ok"}`:    0,
		`{"accuracy_score": "eight", "accuracy_reason": "x"}`: 0,
		`{"accuracy_score": "11", "accuracy_reason": "x"}`:    0,
		`{"accuracy_score": true, "accuracy_reason": "x"}`:    0,
	} {
		acc := &eval.Accuracy{Target: calculator(t, nil), Judge: judge(answer), Input: "6*7?", ExpectedOutput: "42"}
		res, err := acc.Run(context.Background())
		switch {
		case want == 0 && !errors.Is(err, eval.ErrJudge):
			t.Errorf("judge %s: err = %v, want ErrJudge", answer, err)
		case want != 0 && (err != nil || res.Results[0].Score != want):
			t.Errorf("judge %s: %+v, %v; want score %d", answer, res, err, want)
		}
	}
	j := &eval.AgentAsJudge{Outputs: []string{"x"}, Criteria: "c", Scoring: eval.ScoringNumeric, Judge: judge(`{"score": 9.0, "reason": "r"}`)}
	if res, err := j.Run(context.Background()); err != nil || *res.Results[0].Score != 9 {
		t.Errorf("numeric judge 9.0: %+v, %v", res, err)
	}
}

// TestPerformance_WarmsUpTenTimesByDefault: Agno's PerformanceEval makes 10
// warmup runs unless told otherwise; Agentry made none, so a first call's
// one-off costs (connections, caches) were measured. Warmups 0 is that
// default now, NoWarmups none; a suite case without warmups takes the
// default and one with warmups: 0 none.
func TestPerformance_WarmsUpTenTimesByDefault(t *testing.T) {
	t.Parallel()
	count := func(warmups int) (int, error) {
		calls := 0
		_, err := (&eval.Performance{Func: func(context.Context) error { calls++; return nil }, Warmups: warmups, Iterations: 5, NoMemory: true}).
			Run(context.Background())
		return calls, err
	}
	for _, c := range []struct{ warmups, calls int }{{0, 15}, {eval.NoWarmups, 5}, {3, 8}} {
		if n, err := count(c.warmups); err != nil || n != c.calls {
			t.Errorf("Warmups %d: %d calls (%v), want %d", c.warmups, n, err, c.calls)
		}
	}
	if _, err := count(-2); !errors.Is(err, eval.ErrInvalid) {
		t.Errorf("Warmups -2: %v, want ErrInvalid", err)
	}

	d := testdbs.SQLite(t)
	var calls int
	counter := agent.PreHookFunc("count", func(context.Context, *run.Input) error { calls++; return nil })
	a, err := agent.New(agent.Config{ID: "a", Model: scripted.Reply("ok"), PreHooks: []agent.PreHook{counter}})
	if err != nil {
		t.Fatal(err)
	}
	runs := func() int { return calls }
	r := eval.Resolver{Component: func(string, string) (agent.Runner, error) { return a, nil }}
	for _, c := range []struct {
		yaml string
		runs int
	}{{"", 12}, {", warmups: 0", 2}, {", warmups: 1", 3}} {
		s, err := eval.ParseSuite([]byte("cases:\n  - {name: p, type: performance, agent: a, input: hi, iterations: 2" + c.yaml + "}\n"))
		if err != nil {
			t.Fatal(err)
		}
		before := runs()
		if res := s.Run(context.Background(), r, d, ""); len(res) != 1 || !res[0].Passed {
			t.Fatalf("%q: %+v", c.yaml, res)
		}
		if n := runs() - before; n != c.runs {
			t.Errorf("case%s: %d runs, want %d", c.yaml, n, c.runs)
		}
	}
}
