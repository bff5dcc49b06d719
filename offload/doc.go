// Package offload keeps big tool results out of the model's context: a
// result over the threshold is stored in agentfs (indexed in
// agno_tool_results) and replaced by an envelope with a preview; the model
// reads the rest with the read_result and search_result tools it owns.
package offload
