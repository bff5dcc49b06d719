// Package modelspec owns the "provider:model" strings that configuration files and
// the CLI use to name a model (openai:gpt-4o-mini, anthropic:claude-sonnet-4-5,
// ollama:llama3.2, scripted:FILE) and builds the matching model.Model.
package modelspec
