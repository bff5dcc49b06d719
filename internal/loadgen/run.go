package loadgen

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// transportBackoff is how long a worker waits after a request got no response,
// so a server that is down is not hammered by a tight reconnect loop.
const transportBackoff = 10 * time.Millisecond

// maxErrorSamples bounds Report.Errors.
const maxErrorSamples = 8

// Run drives cfg.Concurrency clients against the runs endpoint: first for
// cfg.Warmup (results discarded), then until cfg.Requests or cfg.Duration is
// reached. It stops by itself; when ctx is done it stops early and returns the
// report of what completed together with ctx's error. Requests cut off by
// cancellation are not counted.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg, runsURL, err := cfg.normalized()
	if err != nil {
		return Report{}, err
	}
	client := cfg.HTTPClient
	if client == nil {
		client = newClient(cfg)
		defer client.CloseIdleConnections()
	}
	workers := make([]*worker, cfg.Concurrency)
	for i := range workers {
		workers[i] = newWorker(&cfg, runsURL, client)
	}
	rep := Report{URL: shownURL(runsURL), Stream: cfg.Stream, Concurrency: cfg.Concurrency, SessionMode: cfg.SessionMode}

	if cfg.Warmup > 0 {
		warm := &phase{deadline: time.Now().Add(cfg.Warmup), limit: MaxRequests}
		warm.run(ctx, workers)
		for _, w := range workers {
			w.reset()
		}
		if err := ctx.Err(); err != nil {
			rep.Stopped = "canceled"
			return rep, err
		}
	}

	p := &phase{limit: MaxRequests}
	if cfg.Requests > 0 {
		p.limit = int64(cfg.Requests)
	}
	start := time.Now()
	if cfg.Duration > 0 {
		p.deadline = start.Add(cfg.Duration)
	}
	p.run(ctx, workers)
	rep.Elapsed = time.Since(start)

	var latency, first []time.Duration
	for _, w := range workers {
		latency = append(latency, w.latency...)
		first = append(first, w.firstEvent...)
		rep.Failures.add(w.failures)
		for _, e := range w.errors {
			if len(rep.Errors) < maxErrorSamples && !slices.Contains(rep.Errors, e) {
				rep.Errors = append(rep.Errors, e)
			}
		}
	}
	rep.Successes = len(latency)
	rep.Requests = rep.Successes + rep.Failures.Total()
	if rep.Elapsed > 0 {
		rep.RunsPerSecond = float64(rep.Successes) / rep.Elapsed.Seconds()
	}
	rep.Latency = percentilesOf(latency)
	if cfg.Stream {
		fe := percentilesOf(first)
		rep.FirstEvent = &fe
	}
	switch {
	case ctx.Err() != nil:
		rep.Stopped = "canceled"
	// Every ticket handed out: the count was reached, whether or not a
	// worker asked for another before the deadline passed.
	case p.issued.Load() >= p.limit && cfg.Requests > 0:
		rep.Stopped = "requests"
	case p.issued.Load() >= p.limit:
		rep.Stopped = "request cap"
	default:
		rep.Stopped = "duration"
	}
	return rep, ctx.Err()
}

// phase hands out request tickets until its deadline or limit.
type phase struct {
	deadline time.Time // zero: none
	limit    int64
	issued   atomic.Int64
}

// next claims a ticket; false means the phase is over for this worker.
func (p *phase) next(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	if !p.deadline.IsZero() && !time.Now().Before(p.deadline) {
		return false
	}
	return p.issued.Add(1) <= p.limit
}

func (p *phase) run(ctx context.Context, workers []*worker) {
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			for p.next(ctx) {
				res := w.do(ctx)
				if res.kind != resultOK && ctx.Err() != nil {
					return // cut off by cancellation: not the server's failure
				}
				w.record(res)
				if res.kind == resultTransport {
					sleep(ctx, transportBackoff)
				}
			}
		})
	}
	wg.Wait()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
