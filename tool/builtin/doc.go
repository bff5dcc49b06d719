// Package builtin owns the tools and toolkits configuration files can name
// without Go code (`tools: [calculator, {name: sql, options: {dsn: ...}}]`):
// the registry of names, the options each accepts (decoded strictly; unknown
// keys and Agno 2.x flags are errors naming the valid keys) and their
// construction.
package builtin
