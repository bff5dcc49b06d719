package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/agentryhq/agentry/run"
)

// JournalKey is the run_data member a paused run keeps its journal in. Agno
// drops members its WorkflowRunOutput does not declare, so a Python reader
// reads the run as usual; the server leaves it out of the runs it shows.
const JournalKey = "agentry_workflow_journal"

const journalKey = JournalKey

// journal is what a paused run has done and decided, so continuing it
// replays the step tree to where it stopped instead of running anything
// twice: completed step outputs, outputs waiting for review, the
// decisions of conditions, routers and loop end conditions, and the
// answers people gave. Keys are step ids (paths such as "2.i0.1").
type journal struct {
	mu        sync.Mutex
	Done      map[string]run.StepOutput      `json:"done,omitempty"`
	Review    map[string]run.StepOutput      `json:"review,omitempty"`
	Decisions map[string]string              `json:"decisions,omitempty"`
	Answers   map[string]run.StepRequirement `json:"answers,omitempty"`
	Retries   map[string]int                 `json:"retries,omitempty"`
	// Skip marks steps whose pause timed out with on_timeout skip.
	Skip map[string]bool `json:"skip,omitempty"`
	// Executors are the paused runs of agent and team steps that paused
	// for a tool, by step id: continuing the workflow continues them.
	Executors map[string]*run.Output `json:"executors,omitempty"`
	// Shape fingerprints the step tree the run paused in: its step ids
	// (paths) mean those steps only.
	Shape string `json:"shape,omitempty"`
	// answered are the answers of this continue (not stored).
	answered []run.StepRequirement
	// loaded is the journal as it was read from the paused run: a continue
	// goes on only if the run still holds it (nobody continued it since).
	loaded json.RawMessage
}

func answerKey(path string, post bool) string {
	if post {
		return path + "#review"
	}
	return path
}

// Keys of a step's executor pause and error pause (the answer of the one,
// the decision of the other).
func executorKey(path string) string { return path + "#executor" }
func errorKey(path string) string    { return path + "#error" }

// retryKey counts the retries of a failed step (Step.MaxRetries).
func retryKey(path string) string { return path + "#retry" }

// reqKey is the journal key of a requirement's answer.
func reqKey(r run.StepRequirement) string {
	if r.RequiresExecutorInput {
		return executorKey(r.StepID)
	}
	return answerKey(r.StepID, r.IsPostExecution)
}

// executorAnswer returns the resolutions given for the step's paused
// agent or team run.
func (j *journal) executorAnswer(path string) (run.StepRequirement, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	a, ok := j.Answers[executorKey(path)]
	return a, ok
}

func (j *journal) executor(path string) *run.Output {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.Executors[path]
}

func (j *journal) keepExecutor(path string, o *run.Output) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Executors == nil {
		j.Executors = map[string]*run.Output{}
	}
	j.Executors[path] = o
}

func (j *journal) dropExecutor(path string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.Executors, path)
	delete(j.Answers, executorKey(path))
}

func (j *journal) undecide(key string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.Decisions, key)
}

func (j *journal) done(path string) (run.StepOutput, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	o, ok := j.Done[path]
	return o, ok
}

func (j *journal) complete(path string, o run.StepOutput) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Done == nil {
		j.Done = map[string]run.StepOutput{}
	}
	j.Done[path] = o
}

func (j *journal) reviewing(path string) (run.StepOutput, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	o, ok := j.Review[path]
	return o, ok
}

func (j *journal) keepReview(path string, o run.StepOutput) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Review == nil {
		j.Review = map[string]run.StepOutput{}
	}
	j.Review[path] = o
}

func (j *journal) dropReview(path string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.Review, path)
}

func (j *journal) decision(key string) (string, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	d, ok := j.Decisions[key]
	return d, ok
}

func (j *journal) decide(key, v string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Decisions == nil {
		j.Decisions = map[string]string{}
	}
	j.Decisions[key] = v
}

// answer returns the answer for the pause at path (post: after the step
// ran). A pause that timed out with on_timeout skip answers "rejected".
func (j *journal) answer(path string, post bool) (run.StepRequirement, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	a, ok := j.Answers[answerKey(path, post)]
	if ok && a.Confirmed == nil && !a.RequiresRouteSelection && !a.RequiresUserInput {
		return a, false
	}
	return a, ok
}

func (j *journal) setAnswer(a run.StepRequirement) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Answers == nil {
		j.Answers = map[string]run.StepRequirement{}
	}
	a.StepOutput = nil // kept in Review; not twice
	j.Answers[reqKey(a)] = a
}

// forget drops the answer of a requirement asked again.
func (j *journal) forget(r run.StepRequirement) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.Answers, reqKey(r))
}

func (j *journal) skipped(path string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.Skip[path]
}

func (j *journal) markSkip(path string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Skip == nil {
		j.Skip = map[string]bool{}
	}
	j.Skip[path] = true
}

func (j *journal) retries(path string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.Retries[path]
}

func (j *journal) retried(path string, n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Retries == nil {
		j.Retries = map[string]int{}
	}
	j.Retries[path] = n
}

// comparePaths orders step ids in execution order ("2" < "10", "1.i1" < "1.i2").
func comparePaths(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		x, errx := strconv.Atoi(strings.TrimPrefix(as[i], "i"))
		y, erry := strconv.Atoi(strings.TrimPrefix(bs[i], "i"))
		if errx == nil && erry == nil {
			return x - y
		}
		return strings.Compare(as[i], bs[i])
	}
	return len(as) - len(bs)
}

// shapeOf fingerprints a step tree: each step's kind and name, in place.
// A journal's step ids are paths in the tree; in another tree they would
// name other steps (a replayed output or an answer given to the wrong one).
func shapeOf(steps []Step) string {
	h := sha256.New()
	var walk func([]Step)
	walk = func(steps []Step) {
		fmt.Fprintf(h, "[%d", len(steps))
		for i := range steps {
			fmt.Fprintf(h, "(%s %q", steps[i].Kind(), steps[i].Name)
			for _, c := range steps[i].children() {
				walk(c)
			}
			h.Write([]byte(")"))
		}
		h.Write([]byte("]"))
	}
	walk(steps)
	return hex.EncodeToString(h.Sum(nil)[:12])
}
