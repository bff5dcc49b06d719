// Package tool owns what a model can call: the Tool interface, typed function
// tools (Func[In, Out]) with JSON schemas inferred from Go types, argument
// validation, per-tool timeouts, toolkits and human-in-the-loop flags.
package tool
