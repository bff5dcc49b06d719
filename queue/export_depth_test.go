package queue

import "time"

// DepthCounted is when the enqueue group last counted the queue's depth
// (zero: never, or no group on this dialect).
func (q *Queue) DepthCounted() time.Time {
	if q.group == nil {
		return time.Time{}
	}
	q.group.depth.mu.Lock()
	defer q.group.depth.mu.Unlock()
	return q.group.depth.at
}

// TrustDepthCount sets how long the enqueue group trusts its last count.
func (q *Queue) TrustDepthCount(d time.Duration) {
	q.group.depth.mu.Lock()
	q.group.depth.fresh = d
	q.group.depth.mu.Unlock()
}
