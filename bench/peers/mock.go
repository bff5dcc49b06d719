package peers

import (
	"encoding/json"
	"strings"
	"sync/atomic"
)

// Answers the mock model gives; the same for every framework.
const (
	SingleAnswer = "The weather is sunny today."
	ToolAnswer   = "It is sunny in Paris."
	ChatAnswer   = "Noted. Tell me more about it and I will remember."
	ToolArgs     = `{"city":"Paris"}`
	ToolName     = "get_weather"
	ToolDesc     = "Returns the weather in a city."
	Instruction  = "You are a helpful assistant."
	Turns        = 25
	LastRuns     = 3
)

// Mode selects what the mock model answers.
type Mode int

const (
	// Single answers SingleAnswer.
	Single Mode = iota
	// ToolCall calls get_weather once, then answers ToolAnswer.
	ToolCall
	// Chat answers ChatAnswer on every turn.
	Chat
)

// Mock is the instant model shared by all frameworks: each adapter converts
// its framework's request into (prior user turns, last message is a tool
// result) and the mock's decision back into the framework's message.
type Mock struct {
	Mode Mode
	// Record, when set, appends the number of earlier user turns each model
	// call saw to Seen (sanity tests only; benchmarks leave it off).
	Record bool
	Seen   []int
}

// decide returns the answer text, or call=true for the tool call.
func (m *Mock) decide(priorTurns int, afterTool bool) (text string, call bool) {
	if m.Record {
		m.Seen = append(m.Seen, priorTurns)
	}
	switch m.Mode {
	case ToolCall:
		if afterTool {
			return ToolAnswer, false
		}
		return "", true
	case Chat:
		return ChatAnswer, false
	default:
		return SingleAnswer, false
	}
}

// ToolRuns counts calls of the tool (all frameworks' tools share it).
var ToolRuns atomic.Int64

// WeatherArgs is the tool's argument object.
type WeatherArgs struct {
	City string `json:"city"`
}

// Weather is the tool body every framework wraps.
func Weather(in WeatherArgs) string {
	ToolRuns.Add(1)
	return "It is sunny in " + in.City + "."
}

// weatherJSON decodes the arguments itself (for frameworks whose tools take a
// string, so that every framework decodes JSON once per call).
func weatherJSON(args string) (string, error) {
	var in WeatherArgs
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return "", err
	}
	return Weather(in), nil
}

// Inputs returns the conversation's user messages.
func Inputs() []string {
	in := make([]string, Turns)
	for i := range in {
		in[i] = "This is message number " + itoa(i) + " of our conversation."
	}
	return in
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// countHuman counts "Human: " lines in a LangChainGo buffer-memory string.
func countHuman(s string) int { return strings.Count(s, "Human: ") }
