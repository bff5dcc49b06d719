package agentos

import "testing"

func TestInfo_DescribesTheOSAndWhatItServes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{ID: "os-1", Name: "Test OS", Description: "for tests", Version: "1.2.3"})
	res := get(t, f.url+"/info", nil)
	if res.status != 200 {
		t.Fatalf("GET /info = %d %s", res.status, res.body)
	}
	info := decode[map[string]any](t, res)
	if info["os_id"] != "os-1" || info["name"] != "Test OS" || info["description"] != "for tests" || info["version"] != "1.2.3" {
		t.Errorf("GET /info = %v", info)
	}
	if a, ok := info["agents"].([]any); !ok || len(a) != 1 || a[0] != "echo" {
		t.Errorf("agents = %v", info["agents"])
	}
	for _, k := range []string{"teams", "workflows", "databases"} {
		if _, ok := info[k].([]any); !ok {
			t.Errorf("info %s = %v, want an array", k, info[k])
		}
	}
	if n, _ := info["instantiated_at"].(float64); n <= 0 {
		t.Errorf("instantiated_at = %v", info["instantiated_at"])
	}
}
