// Package responses is the OpenAI Responses API provider (POST /v1/responses):
// reasoning models' encrypted reasoning items are kept on the assistant message
// and sent back on the next turn, so runs stay stateless (store: false);
// OpenAI's built-in tools are off unless configured.
package responses
