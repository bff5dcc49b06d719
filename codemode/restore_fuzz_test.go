package codemode_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/db"
)

// FuzzRestore restores arbitrary saved variables (a source or a JSON
// value, under any name): whatever the saved state, the first cell of the
// session runs (the state restored or refused, never an internal failure)
// and so does the next.
func FuzzRestore(f *testing.F) {
	for _, seed := range []struct{ name, source, json string }{
		{"f", "function f() { return 1 }", ""},
		{"g", "(a) => a.b", ""},
		{"C", "class C { static { this.x = 1 } }", ""},
		{"C", "class C extends (class {}) { static x = 1; [1 + 1]() {} }", ""},
		{"v", "", `{"a":[1,2,{"b":null}]}`},
		{"v", "", `"\u2028"`},
		{"echo", "", "1"},
		{"a b", "", "1"},
		{"f", "function () {}}), (globalThis.x = 1), ({[\"f\"]: 0", ""},
		{"f", "async function* f() { yield await 1 }", ""},
		{"f", "m() {}", ""},
		{"f", "x => arguments", ""},
		{"f", "function f() { /a/// c\n}", ""},
		{"v", "", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]"},
		{"C", "class C { static { while (true) {} } }", ""},
		{"C", "class C { static { throw {toString() { while (true) {} }} } }", ""},
	} {
		f.Add(seed.name, seed.source, seed.json)
	}
	d, _ := openSQLite(f)
	tools, _ := testTools(f)
	cm, err := codemode.New(codemode.Config{Tools: tools, Persist: true, DB: d, CPUTimeLimit: 50 * time.Millisecond, CellTimeout: 5 * time.Second, MemoryLimit: 16 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { cm.Close() })
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, name, source, js string) {
		ctx := context.Background()
		v := map[string]any{"name": name}
		if source != "" {
			v["source"] = source
		} else if json.Valid([]byte(js)) {
			v["json"] = json.RawMessage(js)
		}
		session := "fuzz" + strconv.FormatInt(n.Add(1), 10)
		b, _ := json.Marshal(map[string]any{"version": 1, "session_id": session, "vars": []any{v}})
		if _, err := d.PutFile(ctx, &db.File{Namespace: codemode.DefaultNamespace, Path: "sessions/" + session, Content: b}); err != nil {
			t.Fatal(err)
		}
		for _, code := range []string{"1", "2 + 2"} {
			c, err := cm.Run(ctx, session, "", code)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if c.Status != codemode.StatusOK || !json.Valid([]byte(c.JSON())) {
				t.Fatalf("restoring %s: cell %q: %s", b, code, c.JSON())
			}
		}
		_ = cm.Restart(ctx, session, "")
	})
}
