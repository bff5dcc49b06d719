// Package azure is the Azure OpenAI provider: Chat Completions on a deployment
// ({endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…),
// authenticated by an api-key or by Entra ID (AAD) bearer tokens. The wire
// format is OpenAI's, so it is built on model/openai.
package azure
