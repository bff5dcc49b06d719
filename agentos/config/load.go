package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// renamed maps Agno 2.x names to their 3.0 replacements. A config file using
// an old name fails at start instead of being silently ignored.
var renamed = map[string]string{
	"enable_user_memories":   "update_memory_on_run",
	"search_session_history": "search_past_sessions",
	"num_history_sessions":   "num_past_sessions_to_search",
	"reasoning":              "reasoning_model",
	"enable_mcp_server":      "mcp_server",
	"mcp_config":             "mcp_server",
	"secret_key":             "verification_keys",
	"duckduckgo_search":      "web_search",
	"eval_id":                "run_id",
}

// ownKeys are keys of one section of ours (the value) that share a name
// renamed keys has: there they are that section's own.
var ownKeys = map[string]string{"secret_key": "media_storage"}

// ownKey reports whether key, under parent, is ownKeys' section's own.
func ownKey(key, parent string) bool {
	section, ok := ownKeys[key]
	return ok && section == parent
}

// removed lists 2.x settings with no 3.0 replacement (culture was dropped).
var removed = map[string]bool{
	"enable_agentic_culture":    true,
	"update_cultural_knowledge": true,
	"add_culture_to_context":    true,
	"culture_manager":           true,
	"cultural_knowledge":        true,
	"culture_table":             true,
	"culture":                   true,
}

// freeForm keys hold user data whose keys are not settings.
var freeForm = map[string]bool{"metadata": true, "knowledge_filters": true, "options": true, "dependencies": true, "session_state": true,
	"extra_headers": true, "extra_body": true, "env": true, "headers": true}

// multiMCP names Agno 2.x's MultiMCPTools, deleted in 3.0.
var multiMCP = map[string]bool{"MultiMCPTools": true, "multi_mcp_tools": true, "MCPTools": true, "mcp_tools": true}

const multiMCPHelp = "was removed in Agno 3.0: list each MCP server under the agent's mcp: [{command: …} | {url: …}]"

// Error is a problem in a config file; Line is 0 when unknown.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Load reads the file at path (skipped when path is ""), applies environment
// overrides from lookup (os.LookupEnv when nil) and validates the result. The
// file is a whole configuration or one agent (see Parse).
func Load(path string, lookup func(string) (string, bool)) (Config, error) {
	cfg := Default()
	if path != "" {
		var err error
		if cfg, err = readFile(path); err != nil {
			return Config{}, err
		}
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if err := cfg.ApplyEnv(lookup); err != nil {
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// readFile parses the file at path and resolves the paths in it that are
// relative to the file (jwks_file, scripted model files).
func readFile(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	cfg, err := Parse(data, path)
	if err != nil {
		return Config{}, err
	}
	dir := filepath.Dir(path)
	if cfg.Auth.JWT != nil && cfg.Auth.JWT.JWKSFile != "" && !filepath.IsAbs(cfg.Auth.JWT.JWKSFile) {
		cfg.Auth.JWT.JWKSFile = filepath.Join(dir, cfg.Auth.JWT.JWKSFile)
	}
	if j := cfg.Auth.JWT; j != nil {
		// Key file paths, like jwks_file, are relative to the config file.
		for i := range j.VerificationKeys {
			j.VerificationKeys[i].dir = dir
		}
	}
	for i := range cfg.Agents {
		a := &cfg.Agents[i]
		a.Model.Spec = scriptedFromDir(dir, a.Model.Spec)
		for j := range a.FallbackModels {
			a.FallbackModels[j].Spec = scriptedFromDir(dir, a.FallbackModels[j].Spec)
		}
		a.ReasoningModel = scriptedFromDir(dir, a.ReasoningModel)
		a.ParserModel.Spec = scriptedFromDir(dir, a.ParserModel.Spec)
		a.OutputModel.Spec = scriptedFromDir(dir, a.OutputModel.Spec)
		toolDirsFromDir(dir, a.Tools)
		if a.CodeMode != nil {
			toolDirsFromDir(dir, a.CodeMode.Tools)
		}
	}
	for i := range cfg.Teams {
		cfg.Teams[i].Model = scriptedFromDir(dir, cfg.Teams[i].Model)
	}
	return cfg, nil
}

// toolDirsFromDir makes a toolkit's relative base_dir (files, shell) relative
// to dir, the config file's directory, like scripted models and key files.
func toolDirsFromDir(dir string, tools []Tool) {
	for _, t := range tools {
		if p, ok := t.Options["base_dir"].(string); ok && p != "" && !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") {
			t.Options["base_dir"] = filepath.Join(dir, p)
		}
	}
}

// scriptedFromDir makes a relative "scripted:FILE" model relative to dir, the
// config file's directory, so a file serves the same agents from any working
// directory.
func scriptedFromDir(dir, spec string) string {
	provider, file, ok := strings.Cut(spec, ":")
	if !ok || !strings.EqualFold(strings.TrimSpace(provider), "scripted") {
		return spec
	}
	file = strings.TrimSpace(file)
	if file == "" || filepath.IsAbs(file) {
		return spec
	}
	return "scripted:" + filepath.Join(dir, file)
}

// Parse decodes a config file over Default. The file is either a whole
// configuration or one agent (the shape of an agents: entry, what
// `agentry run --config` has always read), which reads as a configuration
// declaring that agent alone. Unknown keys (with the nearest valid key),
// values of the wrong kind, renamed 2.x keys and removed settings are errors
// naming the YAML key and line. It does not validate.
func Parse(data []byte, filename string) (Config, error) {
	cfg := Default()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Config{}, &Error{File: filename, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(root.Content) == 0 {
		return cfg, nil
	}
	doc := root.Content[0]
	if err := checkNames(doc, filename, ""); err != nil {
		return Config{}, err
	}
	if err := checkFlatReview(doc, filename, ""); err != nil {
		return Config{}, err
	}
	agentFile := isAgentFile(doc)
	shape := reflect.TypeFor[Config]()
	if agentFile {
		shape = reflect.TypeFor[Agent]()
	}
	if errs := checkKeys(doc, shape, filename, ""); len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var err error
	if agentFile {
		var a Agent
		err = dec.Decode(&a)
		cfg.Agents, cfg.agentFile = []Agent{a}, true
	} else {
		err = dec.Decode(&cfg)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return Config{}, decodeError(filename, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Config{}, &Error{File: filename, Line: extra.Line, Msg: "more than one YAML document; keep one"}
	}
	if cfg.Auth.JWT != nil {
		cfg.Auth.JWT.fillDefaults()
	}
	return cfg, nil
}

var linePrefix = regexp.MustCompile(`^line (\d+): `)

// decodeError turns yaml's "line N: msg" errors into "file:N: msg" lines.
func decodeError(file string, err error) error {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	errs := make([]error, 0, len(msgs))
	for _, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		e := &Error{File: file, Msg: m}
		if sub := linePrefix.FindStringSubmatch(m); sub != nil {
			e.Line, _ = strconv.Atoi(sub[1])
			e.Msg = m[len(sub[0]):]
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// checkNames walks the document for renamed and removed keys (and the renamed
// duckduckgo_search tool), skipping free-form maps.
func checkNames(n *yaml.Node, file, parentKey string) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			if to, ok := renamed[key.Value]; ok && !ownKey(key.Value, parentKey) {
				return &Error{File: file, Line: key.Line, Msg: fmt.Sprintf("%q was renamed in Agno 3.0: use %q", key.Value, to)}
			}
			if multiMCP[key.Value] {
				return &Error{File: file, Line: key.Line, Msg: fmt.Sprintf("%q %s", key.Value, multiMCPHelp)}
			}
			if removed[key.Value] {
				return &Error{File: file, Line: key.Line, Msg: fmt.Sprintf("%q was removed in Agno 3.0 (culture settings no longer exist); delete it", key.Value)}
			}
			if freeForm[key.Value] {
				continue
			}
			if parentKey == "tools" && key.Value == "name" {
				if err := checkToolName(val, file); err != nil {
					return err
				}
			}
			if err := checkNames(val, file, key.Value); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if parentKey == "tools" && c.Kind == yaml.ScalarNode {
				if err := checkToolName(c, file); err != nil {
					return err
				}
				continue
			}
			if err := checkNames(c, file, parentKey); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkToolName(n *yaml.Node, file string) error {
	if multiMCP[n.Value] && n.Kind == yaml.ScalarNode {
		return &Error{File: file, Line: n.Line, Msg: fmt.Sprintf("tool %q %s", n.Value, multiMCPHelp)}
	}
	if to, ok := renamed[n.Value]; ok && n.Kind == yaml.ScalarNode {
		return &Error{File: file, Line: n.Line, Msg: fmt.Sprintf("tool %q was renamed in Agno 3.0: use %q", n.Value, to)}
	}
	return nil
}
