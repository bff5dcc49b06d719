package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Duration reads "30s"-style strings or a number of seconds (Agno's timeouts
// are integer seconds).
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil || v < 0 {
			return fmt.Errorf("%q is not a duration (write 30s, 2m or a number of seconds)", s)
		}
		*d = Duration(v)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	// Beyond about 292 years the conversion to time.Duration overflows (to
	// a negative value, which then read as unset).
	if err != nil || f < 0 || f*float64(time.Second) >= math.MaxInt64 {
		return fmt.Errorf("%s is not a duration (write 30s, 2m or a number of seconds)", b)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// selection is the toolkit-level choice of tools every toolkit accepts
// (Agno's include_tools / exclude_tools).
type selection struct {
	IncludeTools []string `json:"include_tools"`
	ExcludeTools []string `json:"exclude_tools"`
}

// removedOptions are Agno 2.x settings with their 3.0 replacement.
var removedOptions = map[string]string{
	"all":                      "include_tools / exclude_tools",
	"enable_list_tables":       "include_tools / exclude_tools",
	"enable_describe_table":    "include_tools / exclude_tools",
	"enable_run_sql_query":     "include_tools / exclude_tools",
	"enable_search":            "include_tools / exclude_tools",
	"enable_news":              "include_tools / exclude_tools",
	"enable_save_file":         "include_tools / exclude_tools",
	"enable_read_file":         "include_tools / exclude_tools",
	"enable_list_files":        "include_tools / exclude_tools",
	"enable_search_files":      "include_tools / exclude_tools",
	"enable_read_file_chunk":   "include_tools / exclude_tools",
	"enable_search_content":    "include_tools / exclude_tools",
	"enable_run_shell_command": "include_tools / exclude_tools",
	"enable_make_request":      "include_tools / exclude_tools",
	"db_url":                   "dsn",
	"db_engine":                "dsn",
}

// decode fills dst (a pointer to an options struct) from opts, refusing keys
// dst has no field for.
func decode(tool string, opts map[string]any, dst any) error {
	valid := optionKeys(reflect.TypeOf(dst).Elem())
	var unknown []string
	for k := range opts {
		if !slices.Contains(valid, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		if to, ok := removedOptions[k]; ok {
			return fmt.Errorf("tool %s: option %q was removed in Agno 3.0: use %s", tool, k, to)
		}
	}
	if len(unknown) > 0 {
		if len(valid) == 0 {
			return fmt.Errorf("tool %s takes no options (got %s)", tool, strings.Join(unknown, ", "))
		}
		return fmt.Errorf("tool %s: unknown option %s (valid options: %s)", tool, strings.Join(unknown, ", "), strings.Join(valid, ", "))
	}
	if len(opts) == 0 {
		return nil
	}
	b, err := json.Marshal(opts)
	if err != nil {
		return fmt.Errorf("tool %s: options: %w", tool, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("tool %s: option %s: got %s, want %s", tool, te.Field, te.Value, kindName(te.Type))
		}
		return fmt.Errorf("tool %s: options: %w", tool, err)
	}
	// Sizes and counts below zero would read as unset (the default), so
	// max_output: -1 ("no limit"?) would quietly mean 50,000.
	v := reflect.ValueOf(dst).Elem()
	for _, f := range reflect.VisibleFields(v.Type()) {
		if f.Anonymous || !f.IsExported() || f.Type == reflect.TypeFor[Duration]() {
			continue
		}
		if k := f.Type.Kind(); (k == reflect.Int || k == reflect.Int64) && v.FieldByIndex(f.Index).Int() < 0 {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			return fmt.Errorf("tool %s: option %s: %d is negative; leave it out (or 0) for the default", tool, name, v.FieldByIndex(f.Index).Int())
		}
	}
	return nil
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Int, reflect.Int64, reflect.Uint16:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	}
	return t.Kind().String()
}

// optionKeys lists the json names of t's fields, embedded structs included.
func optionKeys(t reflect.Type) []string {
	var keys []string
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	sort.Strings(keys)
	return keys
}

// expandEnv replaces ${VAR} in s; a missing variable is an error, so a header
// does not silently go out empty.
func expandEnv(tool, key, s string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out := os.Expand(s, func(v string) string {
		val, ok := lookup(v)
		if !ok {
			missing = append(missing, v)
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("tool %s: option %s refers to unset environment variable %s", tool, key, strings.Join(missing, ", "))
	}
	return out, nil
}
