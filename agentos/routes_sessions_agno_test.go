package agentos

import (
	"slices"
	"testing"
)

func TestSessions_ListWithoutTypeListsEveryKind(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, Config{})
	for path, session := range map[string]string{"/agents/writer/runs": "a1", "/teams/crew/runs": "t1", "/workflows/pipeline/runs": "w1"} {
		if res := postForm(t, f.url+path, map[string]string{"message": "go", "stream": "false", "session_id": session}, nil); res.status != 200 {
			t.Fatalf("POST %s = %d %s", path, res.status, res.body)
		}
	}
	page := decode[Page[map[string]any]](t, get(t, f.url+"/sessions", nil))
	var kinds []string
	for _, s := range page.Data {
		kinds = append(kinds, s["session_type"].(string))
	}
	slices.Sort(kinds)
	if page.Meta.TotalCount != 3 || !slices.Equal(kinds, []string{"agent", "team", "workflow"}) {
		t.Errorf("GET /sessions = %v sessions of kinds %v, want one of each kind", page.Meta.TotalCount, kinds)
	}
	byComponent := decode[Page[map[string]any]](t, get(t, f.url+"/sessions?component_id=crew", nil))
	if len(byComponent.Data) != 1 || byComponent.Data[0]["session_id"] != "t1" {
		t.Errorf("GET /sessions?component_id=crew = %v", byComponent.Data)
	}
	agents := decode[Page[map[string]any]](t, get(t, f.url+"/sessions?type=agent", nil))
	if len(agents.Data) != 1 || agents.Data[0]["session_id"] != "a1" {
		t.Errorf("GET /sessions?type=agent = %v", agents.Data)
	}
}
