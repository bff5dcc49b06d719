package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// File is the on-disk script layout (YAML or JSON):
//
//	id: scripted-demo          # optional model id
//	on_exhausted: repeat_last  # repeat_last | cycle | error
//	latency: 20ms              # per request
//	chunk_latency: 5ms         # per streamed chunk
//	turns:
//	  - match: weather
//	    tool_calls:
//	      - name: get_weather
//	        args: {city: Paris}
//	  - match: weather
//	    content: It is sunny in Paris.
//	  - content: Hello! I am a scripted model.
type File struct {
	ID           string    `json:"id,omitempty" yaml:"id,omitempty"`
	Provider     string    `json:"provider,omitempty" yaml:"provider,omitempty"`
	OnExhausted  Exhausted `json:"on_exhausted,omitempty" yaml:"on_exhausted,omitempty"`
	Latency      string    `json:"latency,omitempty" yaml:"latency,omitempty"`
	ChunkLatency string    `json:"chunk_latency,omitempty" yaml:"chunk_latency,omitempty"`
	Turns        []Turn    `json:"turns" yaml:"turns"`
}

// Load reads a script from a .json, .yaml or .yml file (any other extension is
// read as YAML, which also accepts JSON).
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: read script: %w", err)
	}
	m, err := Parse(data, strings.EqualFold(filepath.Ext(path), ".json"))
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return m, nil
}

// Parse decodes a script; isJSON selects strict JSON (unknown fields rejected)
// over YAML.
func Parse(data []byte, isJSON bool) (*Model, error) {
	var f File
	if isJSON {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("scripted: decode JSON script: %w", err)
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("scripted: decode YAML script: %w", err)
		}
	}
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	return New(cfg)
}

// Config converts the file layout to a Config.
func (f File) Config() (Config, error) {
	cfg := Config{ID: f.ID, Provider: f.Provider, Turns: f.Turns, OnExhausted: f.OnExhausted}
	var err error
	if cfg.Latency, err = parseDuration("latency", f.Latency); err != nil {
		return cfg, err
	}
	if cfg.ChunkLatency, err = parseDuration("chunk_latency", f.ChunkLatency); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func parseDuration(name, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("scripted: %s: %w (write e.g. \"20ms\")", name, err)
	}
	return d, nil
}
