// Package auth verifies AgentOS bearer credentials (a static security key or a
// JWT checked against keys read from PEM, JWKS, key files or HMAC secrets) and
// turns them into a Principal with resource:action scopes. It knows no HTTP;
// package agentos applies it to requests.
package auth
