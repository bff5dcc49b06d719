package queue

import "context"

// Hang makes this queue act like a process that hangs or is cut off from the
// database: no more heartbeats and no more fetching, while the runs it holds
// keep going. Wake resumes heartbeats (fetching stays off).
func (q *Queue) Hang() {
	q.paused.Store(true)
	go q.client.Stop(context.WithoutCancel(q.life))
}

// Wake resumes a hung queue's heartbeats.
func (q *Queue) Wake() { q.paused.Store(false) }
