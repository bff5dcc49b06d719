// Package auth verifies AgentOS bearer credentials (a static security key or a
// JWT checked against configured keys) and turns them into a Principal with
// resource:action scopes. It knows no HTTP; package agentos applies it to requests.
package auth
