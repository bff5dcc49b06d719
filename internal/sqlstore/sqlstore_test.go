package sqlstore

import (
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"testing"
)

func TestDecodeJSON_UnwrapsAgnoDoubleEncoding(t *testing.T) {
	t.Parallel()
	obj := `{"a":[1,"x"]}`
	once, _ := json.Marshal(obj)
	twice, _ := json.Marshal(string(once))
	thrice, _ := json.Marshal(string(twice))
	cases := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"plain object", obj, obj, false},
		{"array", `[1,2]`, `[1,2]`, false},
		{"one string layer", string(once), obj, false},
		{"two string layers", string(twice), obj, false},
		{"three layers stop at two", string(thrice), string(thrice), false},
		{"sql null", ``, ``, false},
		{"json null", `null`, ``, false},
		{"encoded null", `"null"`, ``, false},
		{"plain string kept", `"hello"`, `"hello"`, false},
		{"string of a number kept", `"42"`, `"42"`, false},
		{"number kept", `42`, `42`, false},
		{"whitespace trimmed", "  {\"a\":1}\n", `{"a":1}`, false},
		{"invalid json", `{"a":`, ``, true},
		{"string holding invalid json kept", `"{not json"`, `"{not json"`, false},
		// Python's json writes floats that are not finite as words JSON
		// lacks: read as null; the same words in strings are text.
		{"NaN and infinities", `{"a":NaN,"b":[Infinity,-Infinity,-1],"s":"NaN"}`, `{"a":null,"b":[null,null,-1],"s":"NaN"}`, false},
		{"NaN in a string layer", `"{\"ttft\": NaN}"`, `{"ttft": null}`, false},
		{"NaN does not mend other damage", `{"a":NaN,`, ``, true},
		{"a bare word that is no float", `{"a":Nope}`, ``, true},
	}
	for _, c := range cases {
		got, err := decodeJSON([]byte(c.in))
		if (err != nil) != c.wantErr {
			t.Fatalf("%s: error = %v", c.name, err)
		}
		if string(got) != c.want {
			t.Fatalf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `"{\"a\":1}"`, `"\"[1]\""`, `null`, `"x"`, `[`, ``, `{"a":NaN,"b":"-Infinity"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeJSON(b)
		if err == nil && len(got) > 0 && !json.Valid(got) {
			t.Fatalf("decodeJSON(%q) = %q: not valid JSON", b, got)
		}
		_ = decodeJSONString(b)
	})
}

func TestDecodeJSONString_ReadsMemoryText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`"likes tea"`:          "likes tea",
		`"\"likes tea\""`:      "likes tea",
		`{"memory":"x"}`:       `{"memory":"x"}`,
		`"emoji 🚀 \u00e9"`:     "emoji 🚀 é",
		`not json at all`:      "not json at all",
		`"say \\\"hi\\\" now"`: `say \"hi\" now`,
	} {
		if got := decodeJSONString([]byte(in)); got != want {
			t.Fatalf("decodeJSONString(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestRebindDollar_NumbersPlaceholders(t *testing.T) {
	t.Parallel()
	pg := &Dialect{Rebind: RebindDollar}
	if got := pg.Bind("a = ? AND b IN (?, ?)"); got != "a = $1 AND b IN ($2, $3)" {
		t.Fatalf("dollar: %s", got)
	}
	if got := (&Dialect{}).Bind("a = ?"); got != "a = ?" {
		t.Fatalf("no Rebind: %s", got)
	}
}

// RebindDollar keeps what it rebound: a repeated text is the same answer
// with no allocation, texts past the memo's bound are still rebound, and
// concurrent callers agree.
func TestRebindDollar_Memo(t *testing.T) { // not parallel: AllocsPerRun
	// The test fills the memo to its bound; the package's other tests get
	// it back as it was.
	rebound.mu.Lock()
	kept := maps.Clone(rebound.m)
	rebound.mu.Unlock()
	t.Cleanup(func() {
		rebound.mu.Lock()
		rebound.m = kept
		rebound.mu.Unlock()
	})
	q := "UPDATE memo_test SET a = ? WHERE b = ? AND c <> ?"
	want := "UPDATE memo_test SET a = $1 WHERE b = $2 AND c <> $3"
	if got := RebindDollar(q); got != want {
		t.Fatalf("first: %s", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = RebindDollar(q) }); n != 0 {
		t.Errorf("a repeated text allocates %.0f times, want 0", n)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range maxRebound/2 + 10 {
				in := fmt.Sprintf("SELECT %d FROM memo_%d WHERE x = ? AND y = ?", i, g)
				if got, w := RebindDollar(in), fmt.Sprintf("SELECT %d FROM memo_%d WHERE x = $1 AND y = $2", i, g); got != w {
					t.Errorf("%s: %s, want %s", in, got, w)
					return
				}
			}
		})
	}
	wg.Wait()
	rebound.mu.RLock()
	n := len(rebound.m)
	rebound.mu.RUnlock()
	if n > maxRebound {
		t.Errorf("the memo holds %d texts, bound %d", n, maxRebound)
	}
	if got := RebindDollar(q); got != want {
		t.Fatalf("after the bound: %s", got)
	}
}

func BenchmarkRebindDollar(b *testing.B) {
	q := "INSERT INTO agno_runs AS r (run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, parent_run_id, status, run_index, run_data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET status = excluded.status"
	b.Run("memo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = RebindDollar(q)
		}
	})
	b.Run("rebuilt", func(b *testing.B) { // what every call cost before the memo
		b.ReportAllocs()
		for b.Loop() {
			_ = rebindDollar(q)
		}
	})
}

func TestTables_DefaultsFollowAgno(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in       Tables
		sessions string
		runs     string
	}{
		{Tables{}, "agno_sessions", "agno_runs"},
		{Tables{Sessions: "my_sessions"}, "my_sessions", "my_sessions_runs"},
		{Tables{Sessions: "my_sessions", Runs: "runs_x"}, "my_sessions", "runs_x"},
	}
	for _, c := range cases {
		got := c.in.WithDefaults()
		if got.Sessions != c.sessions || got.Runs != c.runs || got.Versions != "agno_schema_versions" || got.Evals != "agno_eval_runs" {
			t.Fatalf("%+v → %+v", c.in, got)
		}
	}
}

func TestContainsPattern_EscapesWildcards(t *testing.T) {
	t.Parallel()
	if got := ContainsPattern(`50%_A\b`); got != `%50\%\_a\\b%` {
		t.Fatalf("got %s", got)
	}
}
