// Package guardrail owns the built-in input and output checks (Agno's
// guardrails): PII detection and redaction, prompt-injection heuristics and
// OpenAI moderation. Each is an agent.PreHook (and agent.PostHook) rejecting
// with agent.InputCheckError / agent.OutputCheckError.
package guardrail
