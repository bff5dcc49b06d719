package guardrail

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/run"
)

// A 1 KiB message without PII or injection phrases: the cost every clean
// input pays.
var cleanText = strings.Repeat("Please summarise the quarterly report for the sales team. ", 18)

func BenchmarkPII_CleanInput1KiB(b *testing.B) {
	g, err := NewPII(PIIConfig{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		in := run.TextInput(cleanText)
		if err := g.PreRun(ctx, &in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPromptInjection_CleanInput1KiB(b *testing.B) {
	g := NewPromptInjection(nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		in := run.TextInput(cleanText)
		if err := g.PreRun(ctx, &in); err != nil {
			b.Fatal(err)
		}
	}
}

// The same text with a year in it: the digit patterns must run.
func BenchmarkPII_CleanInputWithDigits1KiB(b *testing.B) {
	g, err := NewPII(PIIConfig{})
	if err != nil {
		b.Fatal(err)
	}
	text := cleanText + " for 2024."
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		in := run.TextInput(text)
		if err := g.PreRun(ctx, &in); err != nil {
			b.Fatal(err)
		}
	}
}
