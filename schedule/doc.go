// Package schedule fires cron schedules (Agno 3.0's agno_schedules) as
// durable background runs.
//
// A schedule is a 5-field cron expression (minute hour day-of-month month
// day-of-week, parsed by github.com/robfig/cron/v3, with its @hourly-style
// descriptors; day-of-week 7 is Sunday, L in day-of-month the month's
// last day, "1#1" and "l5" the month's first Monday and last Friday, and a
// range ending before its start ("22-2", "FRI-MON") wraps round, as
// croniter, Agno's parser, reads them) evaluated in an IANA
// time zone (its name in any case, as pytz reads it), and the run it
// starts: POST /agents|teams|workflows/{id}/runs with a payload (message
// and run options). A Scheduler polls the database every PollInterval for enabled
// schedules whose next_run_at has passed and, for each due time the
// catch-up policy keeps, asks its Firer to enqueue the run with the
// idempotency key Key(schedule id, due time). The enqueue is idempotent on
// that key, so any number of replicas polling the same database start
// exactly one run per due time; the schedule run row (agno_schedule_runs)
// has an id derived from the same key, so it is written once as well.
// next_run_at then moves forward with a compare-and-set, and a replica that
// crashes anywhere in between leaves next_run_at where it was: the next
// poll (of any replica) repeats the same keys and finds them taken.
//
// Catch-up after downtime (Config.CatchUp) decides which of the due times
// that passed while no scheduler ran are fired:
//
//   - CatchUpLatest (default, Agno's behaviour): one firing, for the most
//     recent due time, however many were missed.
//   - CatchUpAll: every missed due time, oldest first, at most
//     Config.MaxCatchUp of them (the most recent ones).
//   - CatchUpSkip: none; a due time fires only while it is younger than
//     Config.MisfireGrace, so a schedule resumes at its next due time.
//
// The Scheduler also follows the runs it started: a running schedule run
// whose run reached a final status is finished (success, failed,
// cancelled or paused), as Agno's executor records them; one whose run was
// deleted before it was seen to end is failed, saying so; an attempt
// still without a run past its schedule's timeout_seconds plus 300 s (a
// row Agno's executor inserts before it calls the endpoint, its retries'
// too, left by a process that died) is failed as abandoned, never fired:
// only the scheduler's own retry rows are: those whose id is exactly the
// one it derives, from its keys or from the attempt they follow.
// A failed attempt
// of a schedule with retries left (max_retries) gets the next attempt's
// row at once and its run RetryDelay later, keyed RetryKey(schedule id,
// due time, attempt), so that every attempt also starts once.
//
// A schedule a control plane manages (managed_by, with a provenance
// target: target_type and target_id) whose endpoint no longer addresses
// that target is not fired, as Agno 3.0's executor refuses it: its firing
// (a poll's, a trigger's or a retry's) is recorded failed and the schedule
// disabled with disabled_reason "endpoint_drift:{endpoint}!={type}:{id}".
//
// Time comes from Config.Clock, so tests move it by hand.
package schedule
