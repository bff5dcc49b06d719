package agent_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// WithEventFunc gets a streamed run's events too, each as it is yielded.
func TestStream_DeliversTheEventsToWithEventFunc(t *testing.T) {
	t.Parallel()
	a, _ := confirmAgent(t, agent.Config{})
	var got []run.EventType
	fn := agent.WithEventFunc(func(e run.Event) { got = append(got, e.Event) })
	var yielded []run.EventType
	for ev, err := range a.Stream(context.Background(), run.TextInput("deploy it"), fn) {
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(yielded)+1 || got[len(got)-1] != ev.Event {
			t.Fatalf("fn got %v before %s was yielded", got, ev.Event)
		}
		yielded = append(yielded, ev.Event)
	}
	if len(yielded) == 0 || yielded[len(yielded)-1] != run.EventRunPaused {
		t.Fatalf("yielded %v", yielded)
	}
	paused, err := a.Run(context.Background(), run.TextInput("deploy it"))
	if err != nil {
		t.Fatal(err)
	}
	paused.Requirements[0].ToolExecution.Confirmed = new(true)
	got, yielded = nil, nil
	for ev, err := range a.ContinueStream(context.Background(), paused, fn) {
		if err != nil {
			t.Fatal(err)
		}
		yielded = append(yielded, ev.Event)
	}
	if len(got) != len(yielded) || got[0] != run.EventRunContinued || got[len(got)-1] != run.EventRunCompleted {
		t.Fatalf("fn got %v, the stream yielded %v", got, yielded)
	}
}
