package eval

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// NoWarmups, as Performance.Warmups, makes no warmup runs (0 is the
// default, 10).
const NoWarmups = -1

// defaultWarmups is Agno's PerformanceEval warmup_runs default.
const defaultWarmups = 10

// Performance measures the latency and memory of Func, or of Target answering
// Input: Warmups unmeasured calls, then Iterations measured ones. Memory is
// the bytes the process allocated during a call, in MiB (Go has no per-call
// peak; Agno's Python reads tracemalloc's peak). The eval passes when every
// set limit holds.
type Performance struct {
	Record
	Func   func(ctx context.Context) error
	Target agent.Runner
	Input  string
	// Warmups are unmeasured runs first, 10 when 0 (Agno's warmup_runs
	// default); NoWarmups for none. Iterations defaults to 50 (Agno's).
	Warmups, Iterations int
	// Limits; zero means none.
	MaxAvgRunTime, MaxP95RunTime time.Duration
	MaxAvgMemoryMiB              float64
	// NoMemory skips memory measurement (runtime.ReadMemStats stops the
	// world twice per iteration); it cannot go with MaxAvgMemoryMiB.
	NoMemory bool
}

// PerformanceResult is a performance eval's result, in seconds and MiB
// with Agno's field names: the eval_data of Agno's POST /eval-runs answer
// (each iteration's time and memory, then the statistics). Its row's
// eval_data is Agno's stored shape (performanceRow).
type PerformanceResult struct {
	RunTimes     []float64 `json:"run_times"`
	MemoryUsages []float64 `json:"memory_usages"`
	PerformanceStats
	Outcome `json:"-"`
}

// PerformanceStats are a performance eval's statistics.
type PerformanceStats struct {
	AvgRunTime        float64 `json:"avg_run_time"`
	MinRunTime        float64 `json:"min_run_time"`
	MaxRunTime        float64 `json:"max_run_time"`
	StdDevRunTime     float64 `json:"std_dev_run_time"`
	MedianRunTime     float64 `json:"median_run_time"`
	P95RunTime        float64 `json:"p95_run_time"`
	AvgMemoryUsage    float64 `json:"avg_memory_usage"`
	MinMemoryUsage    float64 `json:"min_memory_usage"`
	MaxMemoryUsage    float64 `json:"max_memory_usage"`
	StdDevMemoryUsage float64 `json:"std_dev_memory_usage"`
	MedianMemoryUsage float64 `json:"median_memory_usage"`
	P95MemoryUsage    float64 `json:"p95_memory_usage"`
}

// validLimits refuses limits no measurement can meet (negative, NaN).
func validLimits(avg, p95 time.Duration, mem float64) error {
	if avg < 0 || p95 < 0 || !(mem >= 0) {
		return fmt.Errorf("%w: performance limits cannot be negative or NaN", ErrInvalid)
	}
	return nil
}

// Run runs the eval and stores its row when DB is set.
func (p *Performance) Run(ctx context.Context) (*PerformanceResult, error) {
	if (p.Func == nil) == (p.Target == nil) {
		return nil, fmt.Errorf("%w: performance eval needs exactly one of a function or a target", ErrInvalid)
	}
	if p.Target != nil && p.Input == "" {
		return nil, fmt.Errorf("%w: performance eval of a target needs an input", ErrInvalid)
	}
	if p.Warmups < NoWarmups || p.Iterations < 0 {
		return nil, fmt.Errorf("%w: warmups and iterations cannot be negative", ErrInvalid)
	}
	if err := validLimits(p.MaxAvgRunTime, p.MaxP95RunTime, p.MaxAvgMemoryMiB); err != nil {
		return nil, err
	}
	if p.NoMemory && p.MaxAvgMemoryMiB != 0 {
		// Unmeasured, the average would be 0 and the limit always hold.
		return nil, fmt.Errorf("%w: performance eval with NoMemory cannot check MaxAvgMemoryMiB", ErrInvalid)
	}
	iterations := p.Iterations
	if iterations == 0 {
		iterations = 50
	}
	warmups := p.Warmups
	switch warmups {
	case 0:
		warmups = defaultWarmups
	case NoWarmups:
		warmups = 0
	}
	id := p.ensureID()
	var last *run.Output
	call := p.Func
	if call == nil {
		n := 0
		call = func(ctx context.Context) error {
			n++
			out, err := runTarget(ctx, p.Target, p.Input, fmt.Sprintf("eval_%s_%d", id, n), p.UserID)
			last = out
			return err
		}
	}
	// A call that ignores ctx must not keep a cancelled eval going.
	for range warmups {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := call(ctx); err != nil {
			return nil, fmt.Errorf("eval: warmup: %w", err)
		}
	}
	res := &PerformanceResult{RunTimes: []float64{}, MemoryUsages: []float64{}}
	var ms runtime.MemStats
	for range iterations {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var before uint64
		if !p.NoMemory {
			runtime.ReadMemStats(&ms)
			before = ms.TotalAlloc
		}
		start := time.Now()
		err := call(ctx)
		elapsed := time.Since(start).Seconds()
		if err != nil {
			return nil, err
		}
		res.RunTimes = append(res.RunTimes, elapsed)
		if !p.NoMemory {
			runtime.ReadMemStats(&ms)
			res.MemoryUsages = append(res.MemoryUsages, float64(ms.TotalAlloc-before)/(1<<20))
		}
	}
	t := summarize(res.RunTimes)
	res.AvgRunTime, res.MinRunTime, res.MaxRunTime, res.StdDevRunTime, res.MedianRunTime, res.P95RunTime = t.avg, t.min, t.max, t.std, t.median, t.p95
	m := summarize(res.MemoryUsages)
	res.AvgMemoryUsage, res.MinMemoryUsage, res.MaxMemoryUsage, res.StdDevMemoryUsage, res.MedianMemoryUsage, res.P95MemoryUsage = m.avg, m.min, m.max, m.std, m.median, m.p95
	res.Passed = (p.MaxAvgRunTime == 0 || res.AvgRunTime <= p.MaxAvgRunTime.Seconds()) &&
		(p.MaxP95RunTime == 0 || res.P95RunTime <= p.MaxP95RunTime.Seconds()) &&
		(p.MaxAvgMemoryMiB == 0 || res.AvgMemoryUsage <= p.MaxAvgMemoryMiB)
	input := map[string]any{"num_iterations": iterations, "warmup_runs": warmups}
	row, err := store(ctx, p.Record, TypePerformance, describe(p.Target, last), res.stored(), input)
	res.Row = row
	return res, err
}

// performanceRow is a performance eval's eval_data as Agno stores it: the
// statistics under "result", each iteration's time and memory under
// "runs" (paired as Python's zip pairs them: without memory measured there
// are none). Agno answers POST /eval-runs with the flat PerformanceResult
// and stores this; its UI reads the stored shape.
type performanceRow struct {
	Result PerformanceStats `json:"result"`
	Runs   []performanceRun `json:"runs"`
}

type performanceRun struct {
	Runtime float64 `json:"runtime"`
	Memory  float64 `json:"memory"`
}

// stored is r as its row's eval_data.
func (r *PerformanceResult) stored() performanceRow {
	out := performanceRow{Result: r.PerformanceStats, Runs: []performanceRun{}}
	for i := range min(len(r.RunTimes), len(r.MemoryUsages)) {
		out.Runs = append(out.Runs, performanceRun{Runtime: r.RunTimes[i], Memory: r.MemoryUsages[i]})
	}
	return out
}
