package offload_test

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentryhq/agentry/offload"
)

// Every key of Config is a key of offload_tool_results: README names
// max_namespace_files as a setting, and the map refused it as unknown.
func TestSetting_TakesEveryConfigKey(t *testing.T) {
	t.Parallel()
	values := map[string]string{"ttl": "1h", "namespace": "results"}
	ct := reflect.TypeFor[offload.Config]()
	for i := range ct.NumField() {
		key, _, _ := strings.Cut(ct.Field(i).Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		v, ok := values[key]
		if !ok {
			v = "7000"
		}
		var s offload.Setting
		if err := yaml.Unmarshal([]byte(key+": "+v), &s); err != nil {
			t.Errorf("offload_tool_results: {%s: %s}: %v", key, v, err)
			continue
		}
		c := s.On()
		if c == nil {
			t.Errorf("{%s: %s} did not turn offloading on", key, v)
			continue
		}
		if reflect.ValueOf(*c).Field(i).IsZero() {
			t.Errorf("{%s: %s} was accepted and not set", key, v)
		}
	}
}
