package tool

import (
	"testing"
	"time"
)

// After a call, its worker waits for the next one: a blocking hand-over
// succeeds because an idle worker receives it (without warm workers nobody
// ever would).
func TestGoWarm_ReusesIdleWorker(t *testing.T) {
	done := make(chan struct{})
	goWarm(func() { done <- struct{}{} })
	<-done
	select {
	case toolJobs <- func() { close(done) }:
	case <-time.After(5 * time.Second):
		t.Fatal("no idle worker took the second call")
	}
	<-done
}
