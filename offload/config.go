package offload

import (
	"errors"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Defaults of Config's zero values.
const (
	DefaultThresholdChars = 16_000
	DefaultPreviewLines   = 20
	DefaultPreviewChars   = 1_200
	DefaultNamespace      = "offload"
	// MaxReadLines and MaxReadChars cap one read_result page.
	MaxReadLines = 400
	MaxReadChars = 16_000
	// MaxMatches caps search_result's matches, MaxPatternBytes its pattern,
	// MaxContextLines its context and MaxMatchLineChars each line it shows.
	MaxMatches        = 20
	MaxPatternBytes   = 512
	MaxContextLines   = 5
	MaxMatchLineChars = 400
	// tailLines is how many last lines an envelope shows after the head.
	tailLines = 5
)

// Config configures offloading (YAML `offload_tool_results`: true or a map
// with these keys). Zero values take the defaults.
type Config struct {
	// ThresholdChars: results longer than this (in characters) are
	// offloaded; default 16,000.
	ThresholdChars int `yaml:"threshold_chars" json:"threshold_chars,omitempty"`
	// PreviewLines and PreviewChars bound the envelope's head preview;
	// defaults 20 lines and 1,200 characters (at most half of
	// ThresholdChars); a PreviewChars given must be below ThresholdChars.
	PreviewLines int `yaml:"preview_lines" json:"preview_lines,omitempty"`
	PreviewChars int `yaml:"preview_chars" json:"preview_chars,omitempty"`
	// TTL is how long a stored result stays readable; zero keeps it until
	// its session's files are deleted.
	TTL Duration `yaml:"ttl" json:"ttl,omitempty"`
	// Namespace prefixes the agentfs namespaces (default "offload").
	Namespace string `yaml:"namespace" json:"namespace,omitempty"`
	// MaxFileBytes, MaxNamespaceBytes and MaxNamespaceFiles are agentfs's
	// quotas (defaults 8 MB, 200 MB and 10,000 results per session).
	MaxFileBytes      int64 `yaml:"max_file_bytes" json:"max_file_bytes,omitempty"`
	MaxNamespaceBytes int64 `yaml:"max_namespace_bytes" json:"max_namespace_bytes,omitempty"`
	MaxNamespaceFiles int   `yaml:"max_namespace_files" json:"max_namespace_files,omitempty"`
}

// Duration is a time.Duration written as "10m" or "24h" in YAML and JSON.
type Duration time.Duration

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("offload: ttl %q is not a duration like \"24h\": %w", n.Value, err)
	}
	*d = Duration(v)
	return nil
}

// ErrInvalidConfig: a Config value out of range.
var ErrInvalidConfig = errors.New("offload: invalid config")

// withDefaults validates and fills zero values.
func (c Config) withDefaults() (Config, error) {
	if c.ThresholdChars < 0 || c.PreviewLines < 0 || c.PreviewChars < 0 || c.TTL < 0 || c.MaxFileBytes < 0 || c.MaxNamespaceBytes < 0 || c.MaxNamespaceFiles < 0 {
		return c, fmt.Errorf("%w: threshold_chars, preview_lines, preview_chars, ttl and quotas must not be negative", ErrInvalidConfig)
	}
	if c.ThresholdChars == 0 {
		c.ThresholdChars = DefaultThresholdChars
	}
	if c.PreviewLines == 0 {
		c.PreviewLines = DefaultPreviewLines
	}
	if c.PreviewChars == 0 {
		// Under a small threshold the default preview is half of it, so
		// that threshold_chars alone is a valid setting.
		c.PreviewChars = min(DefaultPreviewChars, max(c.ThresholdChars/2, 1))
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.PreviewChars >= c.ThresholdChars {
		return c, fmt.Errorf("%w: preview_chars (%d) must be below threshold_chars (%d)", ErrInvalidConfig, c.PreviewChars, c.ThresholdChars)
	}
	return c, nil
}

// Setting is the YAML value of `offload_tool_results`: a boolean, or a map
// of Config keys (which turns offloading on).
type Setting struct {
	// Set reports that the key was given at all (false leaves the
	// default, e.g. the server's).
	Set     bool
	Enabled bool
	Config  Config
}

// UnmarshalYAML accepts true, false or a map of Config keys; unknown keys
// are an error.
func (s *Setting) UnmarshalYAML(n *yaml.Node) error {
	s.Set = true
	if n.Kind == yaml.ScalarNode {
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("offload_tool_results must be true, false or a map of threshold_chars, preview_lines, preview_chars, ttl: %w", err)
		}
		s.Enabled = b
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return errors.New("offload_tool_results must be true, false or a map of threshold_chars, preview_lines, preview_chars, ttl")
	}
	known := map[string]bool{"threshold_chars": true, "preview_lines": true, "preview_chars": true, "ttl": true,
		"namespace": true, "max_file_bytes": true, "max_namespace_bytes": true, "max_namespace_files": true, "enabled": true}
	for i := 0; i < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !known[k] {
			return fmt.Errorf("offload_tool_results: unknown key %q (known: threshold_chars, preview_lines, preview_chars, ttl, namespace, max_file_bytes, max_namespace_bytes, max_namespace_files, enabled)", k)
		}
	}
	var raw struct {
		Config  `yaml:",inline"`
		Enabled *bool `yaml:"enabled"`
	}
	if err := n.Decode(&raw); err != nil {
		return fmt.Errorf("offload_tool_results: %w", err)
	}
	s.Config, s.Enabled = raw.Config, raw.Enabled == nil || *raw.Enabled
	if _, err := s.Config.withDefaults(); err != nil {
		return err
	}
	return nil
}

// On returns the configuration when the setting turns offloading on, else nil.
func (s *Setting) On() *Config {
	if s == nil || !s.Enabled {
		return nil
	}
	c := s.Config
	return &c
}
