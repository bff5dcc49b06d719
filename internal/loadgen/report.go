package loadgen

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of the measured phase (warmup excluded).
type Report struct {
	// URL is the runs endpoint that was driven, a password in it shown as
	// "xxxxx".
	URL         string
	Stream      bool
	Concurrency int
	SessionMode SessionMode
	// Elapsed is from the first request of the measured phase to the end of
	// the last one.
	Elapsed time.Duration
	// Requests = Successes + Failures.Total(); requests aborted by
	// cancellation are not counted.
	Requests  int
	Successes int
	Failures  Failures
	// RunsPerSecond is Successes / Elapsed.
	RunsPerSecond float64
	// Latency covers successful requests: until the body is read (JSON) or
	// RunCompleted arrives (SSE).
	Latency Percentiles
	// FirstEvent is the time to the first complete SSE frame of successful
	// streams; nil unless Stream.
	FirstEvent *Percentiles
	// Stopped says what ended the measured phase: "requests", "duration",
	// "request cap" (MaxRequests in a Duration run) or "canceled".
	Stopped string
	// Errors holds a few distinct failure messages, to say why without logs.
	Errors []string
}

// Failures counts failed requests by kind.
type Failures struct {
	// Status counts responses whose HTTP status was not 200, by code.
	Status map[int]int
	// Transport counts requests that got no response: refused, reset, timed out.
	Transport int
	// BadBody counts 200 responses that were not a completed run: undecodable
	// JSON, a run status other than COMPLETED or ERROR, a stream that does not
	// open with RunStarted or ends without RunCompleted.
	BadBody int
	// RunError counts runs that failed on the server: a RunError event on a
	// stream, or a run JSON with status ERROR.
	RunError int
}

// Total is the number of failed requests.
func (f Failures) Total() int {
	n := f.Transport + f.BadBody + f.RunError
	for _, c := range f.Status {
		n += c
	}
	return n
}

func (f *Failures) add(o Failures) {
	for code, c := range o.Status {
		if f.Status == nil {
			f.Status = map[int]int{}
		}
		f.Status[code] += c
	}
	f.Transport += o.Transport
	f.BadBody += o.BadBody
	f.RunError += o.RunError
}

// String lists the non-zero kinds, e.g. "status 500: 3, transport: 1".
func (f Failures) String() string {
	var parts []string
	codes := make([]int, 0, len(f.Status))
	for code := range f.Status {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	for _, code := range codes {
		parts = append(parts, fmt.Sprintf("status %d: %d", code, f.Status[code]))
	}
	for _, k := range []struct {
		name string
		n    int
	}{{"transport", f.Transport}, {"bad body", f.BadBody}, {"run error", f.RunError}} {
		if k.n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", k.name, k.n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Percentiles summarises a set of durations exactly (nearest-rank on the
// sorted samples; bounded runs keep every sample).
type Percentiles struct {
	Count              int
	Mean               time.Duration
	P50, P90, P99, Max time.Duration
}

// percentilesOf sorts samples in place.
func percentilesOf(samples []time.Duration) Percentiles {
	if len(samples) == 0 {
		return Percentiles{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return Percentiles{
		Count: len(samples),
		Mean:  sum / time.Duration(len(samples)),
		P50:   nearestRank(samples, 50),
		P90:   nearestRank(samples, 90),
		P99:   nearestRank(samples, 99),
		Max:   samples[len(samples)-1],
	}
}

// nearestRank is the smallest sample with at least p% of samples at or below it.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// MarshalJSON writes durations as milliseconds (microsecond precision).
func (p Percentiles) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Count  int     `json:"count"`
		MeanMS float64 `json:"mean_ms"`
		P50MS  float64 `json:"p50_ms"`
		P90MS  float64 `json:"p90_ms"`
		P99MS  float64 `json:"p99_ms"`
		MaxMS  float64 `json:"max_ms"`
	}{p.Count, ms(p.Mean), ms(p.P50), ms(p.P90), ms(p.P99), ms(p.Max)})
}

// MarshalJSON writes snake_case keys and durations in seconds/milliseconds.
func (f Failures) MarshalJSON() ([]byte, error) {
	status := map[string]int{}
	for code, c := range f.Status {
		status[fmt.Sprint(code)] = c
	}
	return json.Marshal(struct {
		Total     int            `json:"total"`
		Status    map[string]int `json:"status"`
		Transport int            `json:"transport"`
		BadBody   int            `json:"bad_body"`
		RunError  int            `json:"run_error"`
	}{f.Total(), status, f.Transport, f.BadBody, f.RunError})
}

// MarshalJSON writes the report for scripts and docs/benchmarks.md.
func (r Report) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		URL           string       `json:"url"`
		Stream        bool         `json:"stream"`
		Concurrency   int          `json:"concurrency"`
		SessionMode   SessionMode  `json:"session_mode"`
		ElapsedS      float64      `json:"elapsed_s"`
		Requests      int          `json:"requests"`
		Successes     int          `json:"successes"`
		Failures      Failures     `json:"failures"`
		RunsPerSecond float64      `json:"runs_per_second"`
		Latency       Percentiles  `json:"latency"`
		FirstEvent    *Percentiles `json:"first_event,omitempty"`
		Stopped       string       `json:"stopped"`
		Errors        []string     `json:"errors,omitempty"`
	}{r.URL, r.Stream, r.Concurrency, r.SessionMode, math.Round(r.Elapsed.Seconds()*1e3) / 1e3,
		r.Requests, r.Successes, r.Failures, math.Round(r.RunsPerSecond*10) / 10,
		r.Latency, r.FirstEvent, r.Stopped, r.Errors})
}

// String renders a small table for terminals.
func (r Report) String() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	mode := "json"
	if r.Stream {
		mode = "sse"
	}
	clients := "clients"
	if r.Concurrency == 1 {
		clients = "client"
	}
	fmt.Fprintf(tw, "target\t%s (%s, %d %s, session %s)\n", r.URL, mode, r.Concurrency, clients, r.SessionMode)
	fmt.Fprintf(tw, "elapsed\t%s (stopped: %s)\n", r.Elapsed.Round(time.Millisecond), r.Stopped)
	fmt.Fprintf(tw, "requests\t%d\tok %d\tfailed %d\t%s\n", r.Requests, r.Successes, r.Failures.Total(), r.Failures)
	fmt.Fprintf(tw, "runs/s\t%.1f\n", r.RunsPerSecond)
	fmt.Fprintf(tw, "\tp50\tp90\tp99\tmax\tmean\n")
	row := func(name string, p Percentiles) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, fmtDur(p.P50), fmtDur(p.P90), fmtDur(p.P99), fmtDur(p.Max), fmtDur(p.Mean))
	}
	row("latency", r.Latency)
	if r.FirstEvent != nil {
		row("first event", *r.FirstEvent)
	}
	tw.Flush()
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	return b.String()
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/1e6) }
