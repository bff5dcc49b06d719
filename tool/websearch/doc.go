// Package websearch owns the web_search tool (Agno's WebSearchTools /
// DuckDuckGoTools): one Backend interface with DuckDuckGo's HTML endpoint as
// the keyless default and SearXNG, Brave and Tavily behind API keys.
package websearch
