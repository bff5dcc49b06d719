// Package config reads the AgentOS server configuration: a strict YAML file
// (unknown keys and Agno 2.x names are errors naming the key and line), then
// environment overrides, then validation. It builds the auth.Authenticator.
package config
