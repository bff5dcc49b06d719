// Package trace owns Agentry's OpenTelemetry spans: a run (invoke_agent)
// wrapping its model calls (chat) and tool calls (execute_tool), with the
// GenAI semantic-convention attributes (model, provider, tokens, finish
// reasons, tool name), and an OTLP exporter configured from the standard
// OTEL_* environment variables. Tracing is off unless a TracerProvider is
// given: nothing is wrapped then, so it costs nothing.
package trace
