//go:build linux

package codemode

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadClock identifies the CPU clock of the calling OS thread, which the
// caller has locked to its goroutine; ok is false when there is none.
func threadClock() (clock int32, ok bool) {
	tid := unix.Gettid()
	// The kernel's per-thread CPU clock id (what pthread_getcpuclockid
	// returns): MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED).
	clock = int32((^tid)<<3 | 6)
	_, ok = clockRead(clock)
	return clock, ok
}

// clockRead reads a CPU clock from any thread.
func clockRead(clock int32) (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
