// Package runlog keeps the events of background runs in the run's database
// (table agentry_run_events, keyed by run id and sequence) so that any
// replica can stream them live and replay them after a client reconnects.
package runlog
