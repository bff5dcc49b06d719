package agentos

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/eval"
	"github.com/agentryhq/agentry/internal/modelspec"
	"github.com/agentryhq/agentry/model"
)

// evalView is AgentOS's EvalSchema.
type evalView struct {
	ID                     string          `json:"id"`
	AgentID                *string         `json:"agent_id"`
	ModelID                *string         `json:"model_id"`
	ModelProvider          *string         `json:"model_provider"`
	TeamID                 *string         `json:"team_id"`
	WorkflowID             *string         `json:"workflow_id"`
	Name                   *string         `json:"name"`
	EvaluatedComponentName *string         `json:"evaluated_component_name"`
	UserID                 *string         `json:"user_id"`
	EvalType               string          `json:"eval_type"`
	EvalData               json.RawMessage `json:"eval_data"`
	EvalInput              json.RawMessage `json:"eval_input"`
	CreatedAt              *string         `json:"created_at"`
	UpdatedAt              *string         `json:"updated_at"`
}

func newEvalView(e *db.EvalRun) evalView {
	v := evalView{ID: e.RunID, AgentID: optional(e.AgentID), ModelID: optional(e.ModelID), ModelProvider: optional(e.ModelProvider),
		TeamID: optional(e.TeamID), WorkflowID: optional(e.WorkflowID), Name: optional(e.Name),
		EvaluatedComponentName: optional(e.EvaluatedComponentName), UserID: optional(e.UserID), EvalType: e.EvalType,
		EvalData: e.EvalData, EvalInput: e.EvalInput, CreatedAt: isoTime(e.CreatedAt), UpdatedAt: isoTime(e.UpdatedAt)}
	if len(v.EvalData) == 0 {
		v.EvalData = json.RawMessage("{}")
	}
	if len(v.EvalInput) == 0 {
		v.EvalInput = json.RawMessage("null")
	}
	return v
}

var evalPageRules = pageRules{SortColumns: db.EvalSortColumns, DefaultOrder: db.Desc}

// listEvalRuns is GET /eval-runs: agent_id, team_id, workflow_id, model_id,
// type (agent|team|workflow), eval_types (comma-separated) and the page.
func (s *Server) listEvalRuns(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, err := s.database(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	pq, err := parsePageQuery(q, evalPageRules)
	if err != nil {
		return err
	}
	var types []string
	for _, v := range q["eval_types"] {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				if !slices.Contains(db.EvalTypes, t) {
					return errorf(http.StatusUnprocessableEntity, "Invalid eval_type: %s. Valid types: %s", t, strings.Join(db.EvalTypes, ", "))
				}
				types = append(types, t)
			}
		}
	}
	switch q.Get("type") {
	case "", "agent", "team", "workflow":
	default:
		return errorf(http.StatusUnprocessableEntity, "type must be agent, team or workflow")
	}
	runs, total, err := d.ListEvalRuns(r.Context(), db.EvalFilter{
		AgentID: q.Get("agent_id"), TeamID: q.Get("team_id"), WorkflowID: q.Get("workflow_id"), ModelID: q.Get("model_id"),
		EvalTypes: types, ComponentType: q.Get("type"), UserID: actAs(r.Context(), q.Get("user_id")).id,
		Limit: pq.Limit, Page: pq.Page, SortBy: pq.SortBy, SortOrder: pq.SortOrder,
	})
	if err = s.leaveOutCorrupt(r.Context(), "list eval runs", err); err != nil {
		return err
	}
	views := make([]evalView, 0, len(runs))
	for i := range runs {
		views = append(views, newEvalView(&runs[i]))
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

// loadEvalRun fetches {eval_run_id}: 404 when missing, another user's (the db
// scope hides it) or not owned by an explicit user_id.
func (s *Server) loadEvalRun(r *http.Request, requested string) (*db.DB, *db.EvalRun, error) {
	d, err := s.database(r)
	if err != nil {
		return nil, nil, err
	}
	id := chi.URLParam(r, "eval_run_id")
	e, err := d.GetEvalRun(r.Context(), id)
	if errors.Is(err, db.ErrNotFound) || (err == nil && !actAs(r.Context(), requested).owns(e.UserID)) {
		return nil, nil, errorf(http.StatusNotFound, "Eval run with id '%s' not found", id)
	}
	if err != nil {
		return nil, nil, err
	}
	return d, e, nil
}

func (s *Server) getEvalRun(w http.ResponseWriter, r *http.Request) error {
	_, e, err := s.loadEvalRun(r, r.URL.Query().Get("user_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newEvalView(e))
	return nil
}

// renameEvalRun is PATCH /eval-runs/{eval_run_id} with {"name"}.
func (s *Server) renameEvalRun(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name   string `json:"name"`
		UserID string `json:"user_id"`
	}
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	if n := len([]rune(req.Name)); n < 1 || n > 255 {
		return errorf(http.StatusUnprocessableEntity, "name must be 1 to 255 characters")
	}
	d, e, err := s.loadEvalRun(r, req.UserID)
	if err != nil {
		return err
	}
	out, err := d.RenameEvalRun(r.Context(), e.RunID, req.Name)
	if errors.Is(err, db.ErrNotFound) {
		return errorf(http.StatusNotFound, "Eval run with id '%s' not found", e.RunID)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newEvalView(out))
	return nil
}

// deleteEvalRuns is DELETE /eval-runs with {"eval_run_ids": [...]}: the
// caller's runs among them are deleted, the others ignored like missing ones.
func (s *Server) deleteEvalRuns(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	var req struct {
		EvalRunIDs []string `json:"eval_run_ids"`
		UserID     string   `json:"user_id"`
	}
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	if len(req.EvalRunIDs) == 0 {
		return errorf(http.StatusUnprocessableEntity, "eval_run_ids must list at least one eval run")
	}
	if err := d.DeleteEvalRuns(actAs(r.Context(), req.UserID).scope(r.Context()), req.EvalRunIDs...); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// evalRunInput is AgentOS's EvalRunInput.
type evalRunInput struct {
	AgentID                   string                        `json:"agent_id"`
	TeamID                    string                        `json:"team_id"`
	ModelID                   string                        `json:"model_id"`
	ModelProvider             string                        `json:"model_provider"`
	EvalType                  string                        `json:"eval_type"`
	Input                     string                        `json:"input"`
	AdditionalGuidelines      string                        `json:"additional_guidelines"`
	AdditionalContext         string                        `json:"additional_context"`
	NumIterations             *int                          `json:"num_iterations"`
	Name                      string                        `json:"name"`
	ExpectedOutput            string                        `json:"expected_output"`
	Criteria                  string                        `json:"criteria"`
	ScoringStrategy           string                        `json:"scoring_strategy"`
	Threshold                 *int                          `json:"threshold"`
	WarmupRuns                int                           `json:"warmup_runs"`
	ExpectedToolCalls         []string                      `json:"expected_tool_calls"`
	AllowAdditionalToolCalls  bool                          `json:"allow_additional_tool_calls"`
	ExpectedToolCallArguments map[string]eval.ArgumentSpecs `json:"expected_tool_call_arguments"`
	UserID                    string                        `json:"user_id"`
}

// evalTypeFields are the evalRunInput fields each eval type uses.
var evalTypeFields = map[string][]string{
	string(eval.TypeAccuracy):     {"expected_output", "additional_context", "additional_guidelines", "num_iterations"},
	string(eval.TypeAgentAsJudge): {"criteria", "scoring_strategy", "threshold", "additional_guidelines", "num_iterations"},
	string(eval.TypePerformance):  {"warmup_runs", "num_iterations"},
	string(eval.TypeReliability):  {"expected_tool_calls", "allow_additional_tool_calls", "expected_tool_call_arguments"},
}

// inapplicable names the first field set that the request's eval type
// does not use ("" when none), so that a setting is never silently
// ignored. A field at the value Agno's EvalRunInput defaults it to
// (num_iterations 1, threshold 7, scoring_strategy binary, warmup_runs 0)
// counts as unset: Agno's clients may send every field of the model.
func (req *evalRunInput) inapplicable() string {
	set := map[string]bool{
		"expected_output":              req.ExpectedOutput != "",
		"additional_context":           req.AdditionalContext != "",
		"additional_guidelines":        req.AdditionalGuidelines != "",
		"criteria":                     req.Criteria != "",
		"scoring_strategy":             req.ScoringStrategy != "" && req.ScoringStrategy != eval.ScoringBinary,
		"threshold":                    req.Threshold != nil && *req.Threshold != 7,
		"warmup_runs":                  req.WarmupRuns != 0,
		"num_iterations":               req.NumIterations != nil && *req.NumIterations != 1,
		"expected_tool_calls":          len(req.ExpectedToolCalls) > 0,
		"allow_additional_tool_calls":  req.AllowAdditionalToolCalls,
		"expected_tool_call_arguments": len(req.ExpectedToolCallArguments) > 0,
	}
	uses := evalTypeFields[req.EvalType]
	keys := slices.Sorted(maps.Keys(set))
	for _, k := range keys {
		if set[k] && !slices.Contains(uses, k) {
			return k
		}
	}
	return ""
}

// createEvalRun is POST /eval-runs: it runs one eval against an agent or a
// team and stores the result as the caller (NULL-owned for an unscoped
// caller that names no user_id). The judge of accuracy and agent-as-judge
// evals is model_provider:model_id when both are given, else the target's
// own model, as Agno does.
func (s *Server) createEvalRun(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	var req evalRunInput
	if err := decodeJSONBody(r, &req); err != nil {
		return err
	}
	iterations := 1
	if req.NumIterations != nil {
		iterations = *req.NumIterations
	}
	threshold := 7
	if req.Threshold != nil {
		threshold = *req.Threshold
	}
	switch {
	case !slices.Contains(db.EvalTypes, req.EvalType):
		return errorf(http.StatusUnprocessableEntity, "eval_type must be one of: %s", strings.Join(db.EvalTypes, ", "))
	case strings.TrimSpace(req.Input) == "":
		return errorf(http.StatusUnprocessableEntity, "input is required")
	case iterations < 1 || iterations > 100:
		return errorf(http.StatusUnprocessableEntity, "num_iterations must be 1 to 100")
	case req.WarmupRuns < 0 || req.WarmupRuns > 10:
		return errorf(http.StatusUnprocessableEntity, "warmup_runs must be 0 to 10")
	case threshold < 1 || threshold > 10:
		return errorf(http.StatusUnprocessableEntity, "threshold must be 1 to 10")
	case req.ScoringStrategy != "" && req.ScoringStrategy != eval.ScoringBinary && req.ScoringStrategy != eval.ScoringNumeric:
		return errorf(http.StatusUnprocessableEntity, "scoring_strategy must be numeric or binary")
	case req.AgentID != "" && req.TeamID != "":
		return errorf(http.StatusBadRequest, "Only one of agent_id or team_id must be provided")
	case req.AgentID == "" && req.TeamID == "":
		return errorf(http.StatusBadRequest, "One of agent_id or team_id must be provided")
	}
	if key := req.inapplicable(); key != "" {
		return errorf(http.StatusUnprocessableEntity, "%s does not apply to a %s eval", key, req.EvalType)
	}
	if err := checkBodyID("user_id", req.UserID); err != nil {
		return err
	}
	var target agent.Runner
	var own model.Model
	if req.AgentID != "" {
		a, ok := s.agents[req.AgentID]
		if !ok {
			return errorf(http.StatusNotFound, "Agent with id '%s' not found", req.AgentID)
		}
		target, own = a, a.Config().Model
	} else {
		t, ok := s.teams[req.TeamID]
		if !ok {
			return errorf(http.StatusNotFound, "Team with id '%s' not found", req.TeamID)
		}
		target, own = t, t.Config().Model
	}
	judge := own
	if req.ModelID != "" && req.ModelProvider != "" {
		if judge, err = modelspec.New(strings.ToLower(req.ModelProvider)+":"+req.ModelID, modelspec.Options{}); err != nil {
			return errorf(http.StatusBadRequest, "model %s:%s: %v", req.ModelProvider, req.ModelID, err)
		}
	}
	user := actAs(r.Context(), req.UserID).id
	rec := eval.Record{Name: req.Name, DB: d, UserID: user}
	ctx := r.Context()
	var row *db.EvalRun
	switch eval.Type(req.EvalType) {
	case eval.TypeAccuracy:
		if req.ExpectedOutput == "" {
			return errorf(http.StatusUnprocessableEntity, "expected_output is required for an accuracy eval")
		}
		res, err := (&eval.Accuracy{Record: rec, Target: target, Judge: judge, Input: req.Input, ExpectedOutput: req.ExpectedOutput,
			Iterations: iterations, AdditionalGuidelines: req.AdditionalGuidelines, AdditionalContext: req.AdditionalContext}).Run(ctx)
		if err != nil {
			return evalFailed(err)
		}
		row = res.Row
	case eval.TypeAgentAsJudge:
		if req.Criteria == "" {
			return errorf(http.StatusUnprocessableEntity, "criteria is required for an agent_as_judge eval")
		}
		res, err := (&eval.AgentAsJudge{Record: rec, Target: target, Judge: judge, Input: req.Input, Criteria: req.Criteria,
			Scoring: req.ScoringStrategy, Threshold: threshold, Iterations: iterations, AdditionalGuidelines: req.AdditionalGuidelines}).Run(ctx)
		if err != nil {
			return evalFailed(err)
		}
		row = res.Row
	case eval.TypePerformance:
		// Agno's route takes warmup_runs 0 by default: none.
		warmups := req.WarmupRuns
		if warmups == 0 {
			warmups = eval.NoWarmups
		}
		res, err := (&eval.Performance{Record: rec, Target: target, Input: req.Input, Warmups: warmups, Iterations: iterations}).Run(ctx)
		if err != nil {
			return evalFailed(err)
		}
		// Agno answers with the flat result and stores its own shape
		// (result and runs), which GET /eval-runs then returns.
		flat, err := json.Marshal(res)
		if err != nil {
			return err
		}
		answered := *res.Row
		answered.EvalData = flat
		row = &answered
	case eval.TypeReliability:
		if req.ExpectedToolCalls == nil {
			// As Agno's route: without it the eval would pass whatever
			// the target called ([] asks for no tool call at all).
			return errorf(http.StatusBadRequest, "expected_tool_calls is required for reliability evaluations")
		}
		res, err := (&eval.Reliability{Record: rec, Target: target, Input: req.Input, ExpectedToolCalls: req.ExpectedToolCalls,
			AllowAdditionalToolCalls: req.AllowAdditionalToolCalls, ExpectedToolCallArguments: req.ExpectedToolCallArguments}).Run(ctx)
		if err != nil {
			return evalFailed(err)
		}
		row = res.Row
	}
	writeJSON(w, http.StatusOK, newEvalView(row))
	return nil
}

// evalFailed maps an eval that could not run: the judge's unreadable answer
// or a failed run of the target is a 500 naming the reason; storage errors,
// the target's (agent.ErrStorage) too, keep their own mapping (statusOf),
// which never shows the database's own error.
func evalFailed(err error) error {
	if errors.Is(err, db.ErrUnavailable) || errors.Is(err, db.ErrInvalidRecord) || errors.Is(err, agent.ErrStorage) {
		return err
	}
	return errorf(http.StatusInternalServerError, "Failed to run eval: %v", err)
}
