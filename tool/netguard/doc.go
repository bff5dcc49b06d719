// Package netguard owns the one SSRF guard every outbound fetch shares (web
// tools, URL knowledge, media): a dialer that checks each address after DNS
// resolution, so rebinding and redirects to private addresses are refused.
package netguard
