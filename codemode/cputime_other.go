//go:build !linux

package codemode

import "time"

// threadClock reports that no per-thread CPU clock is available: the CPU
// time limit falls back to the time spent running JavaScript.
func threadClock() (int32, bool) { return 0, false }

func clockRead(int32) (time.Duration, bool) { return 0, false }
