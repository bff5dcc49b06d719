// Package run owns the vocabulary shared by agent, team and workflow runs:
// Output (Agno's RunOutput, TeamRunOutput and WorkflowRunOutput in run_data's
// field names), statuses, inputs, streamed events with Agno's names, tool
// executions, requirements of paused runs and workflow step outputs. It also
// owns what identifies and finds a run while it executes: Component (which
// component produced it: the one mapping from a kind to Agno's field and
// event names) and Registry (the process's runs in progress, for
// cancellation).
//
// run_data is written the way Agno 3.0 writes it and read the way any Agno
// 2.0–3.0 version wrote it, losing nothing:
//   - every type keeps the stored members it does not model in Extra, and
//     the stored form of members it leaves empty ("from_history": false,
//     "confirmed": null, "events": []), and writes them back;
//   - messages[].tool_calls are OpenAI-shaped, {"id", "type": "function",
//     "function": {"name", "arguments"}} with arguments a JSON string
//     (model.ToolCall); older flat {id, name, arguments} calls are read too;
//   - an agent or team run's input is a RunInput object (input_content,
//     images, videos, audios, files); a workflow run's input is the bare
//     value (a string, or a structured input's object);
//   - metrics carry tokens and timing: duration, time_to_first_token, a
//     tool's start_time and end_time (epoch seconds; ISO 8601 strings are
//     read and written back as stored), a workflow's steps;
//   - numbers Agno has written in another form (a float created_at, an
//     integer beyond 2^53 in content) are written back as stored while the
//     Go value is unchanged.
package run
