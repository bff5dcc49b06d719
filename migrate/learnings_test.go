package migrate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/migrate"
)

// learningFixture is one agno_learnings row as a 2.x Agno process wrote it.
type learningFixture struct {
	id, namespace, user, etype, eid string
	content, metadata               string
	created                         int64
}

// createLearnings adds the 2.x learnings table (its columns are the 3.0
// ones; only entity memory keys changed) with rows.
func (f *fixtureDB) createLearnings(t *testing.T, rows []learningFixture) {
	t.Helper()
	key, str, js := "VARCHAR", "VARCHAR", "JSON"
	charset := ""
	switch f.dialect {
	case postgresName:
		js = "JSONB"
	case mysqlName:
		key, str, charset = "VARCHAR(128)", "VARCHAR(255)", " DEFAULT CHARSET=utf8mb4"
	}
	f.exec(t, fmt.Sprintf(`CREATE TABLE %s (learning_id %s NOT NULL PRIMARY KEY, learning_type %s NOT NULL, namespace %s, user_id %s,
agent_id %s, team_id %s, workflow_id %s, session_id %s, entity_id %s, entity_type %s, content %s NOT NULL, metadata %s,
created_at BIGINT NOT NULL, updated_at BIGINT)%s`, f.table("agno_learnings"), key, str, str, str, str, str, str, str, str, str, js, js, charset))
	for _, r := range rows {
		ph := "?, ?, ?, ?, ?, ?, ?, ?, ?"
		q := fmt.Sprintf("INSERT INTO %s (learning_id, learning_type, namespace, user_id, entity_id, entity_type, content, metadata, created_at, updated_at) VALUES (%s, %d)",
			f.table("agno_learnings"), ph, r.created)
		if f.dialect == postgresName {
			q = fmt.Sprintf("INSERT INTO %s (learning_id, learning_type, namespace, user_id, entity_id, entity_type, content, metadata, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, %d)",
				f.table("agno_learnings"), r.created)
		}
		if _, err := f.db.Exec(q, r.id, "entity_memory", null(r.namespace), null(r.user), null(r.eid), null(r.etype), r.content, null(r.metadata), r.created); err != nil {
			t.Fatalf("insert learning %s: %v", r.id, err)
		}
	}
}

func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// storedLearning is a learnings row as the tests compare it.
type storedLearning struct {
	Namespace, User string
	Content         any
	Created         int64
}

func (f *fixtureDB) readLearnings(t *testing.T) map[string]storedLearning {
	t.Helper()
	content := "content"
	if f.dialect == postgresName {
		content = "content::text"
	}
	rows, err := f.db.Query(fmt.Sprintf("SELECT learning_id, COALESCE(namespace, ''), COALESCE(user_id, ''), %s, created_at FROM %s",
		content, f.table("agno_learnings")))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]storedLearning{}
	for rows.Next() {
		var id string
		var raw []byte
		var s storedLearning
		if err := rows.Scan(&id, &s.Namespace, &s.User, &raw, &s.Created); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &s.Content); err != nil {
			t.Fatalf("learning %s content %q: %v", id, raw, err)
		}
		out[id] = s
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// legacyLearnings covers every bucket of the re-key.
func legacyLearnings() []learningFixture {
	u2Key := db.EntityLearningID("user", "u2", "company", "acme")
	keyed := db.EntityLearningID("user", "u1", "person", "carol")
	return []learningFixture{
		// legacy, owned by u1: re-keyed.
		{id: "entity_user_person_alice", namespace: "user", user: "u1", etype: "person", eid: "alice", created: 1700000001,
			content: `{"user_id":"u1","name":"Alice","facts":[{"id":"f1","content":"Likes  tea"}],"extra":{"kept":true}}`},
		// legacy, owned by u2, whose key already holds a newer row: merged.
		{id: "entity_user_company_acme", namespace: "user", user: "u2", etype: "company", eid: "acme", created: 1700000002,
			content: `{"user_id":"u2","name":"ACME Corp","description":"old description","facts":[{"id":"a","content":"makes anvils"},{"id":"b","content":"Based in Utah"}],` +
				`"events":[{"content":"founded","date":"1900"}],"properties":{"size":"big","hq":"utah"},"aliases":["Acme"],"legacy_only":1}`},
		{id: u2Key, namespace: "user", user: "u2", etype: "company", eid: "acme", created: 1800000000,
			content: `{"user_id":"u2","name":"Acme","description":"","facts":[{"id":"c","content":"based in  utah"}],"events":[],"properties":{"size":"huge"}}`},
		// legacy, owner u1, written by u3 too: quarantined.
		{id: "entity_user_person_bob", namespace: "user", user: "u1", etype: "person", eid: "bob", created: 1700000003,
			content: `{"user_id":"u3","name":"Bob"}`},
		// legacy without an owner: left in place.
		{id: "entity_user_place_paris", namespace: "user", etype: "place", eid: "paris", created: 1700000004,
			content: `{"name":"Paris"}`},
		// no entity type: malformed, left in place.
		{id: "entity_user__x", namespace: "user", user: "u1", eid: "x", created: 1700000005, content: `{"name":"X"}`},
		// content not an object: malformed.
		{id: "entity_user_person_dan", namespace: "user", user: "u1", etype: "person", eid: "dan", created: 1700000006, content: `["not","an","object"]`},
		// already on a per-user key: keyed.
		{id: keyed, namespace: "user", user: "u1", etype: "person", eid: "carol", created: 1700000007, content: `{"user_id":"u1","name":"Carol"}`},
		// per-user key, recorded user differs: contaminated_keyed, reported only.
		{id: db.EntityLearningID("user", "u1", "person", "eve"), namespace: "user", user: "u1", etype: "person", eid: "eve", created: 1700000008,
			content: `{"user_id":"u9","name":"Eve"}`},
		// the global namespace is shared on purpose: not scanned.
		{id: "entity_global_person_alice", namespace: "global", etype: "person", eid: "alice", created: 1700000009, content: `{"name":"Alice"}`},
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// TestUp_RekeysUserEntityLearnings: the learnings table's 3.0.0 step moves
// each legacy namespace "user" entity row onto its owner's key, folds it
// into a newer row already there, quarantines a row two users wrote, reports
// what it cannot move, and stamps the table; a second Up finds nothing to do.
func TestUp_RekeysUserEntityLearnings(t *testing.T) {
	onEachBackend(t, []variant{variants[1], variants[3], variants[5]}, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.createLearnings(t, legacyLearnings())

		// A dry run reports the same buckets and writes nothing.
		dry, err := f.manager(t, func(c *migrate.Config) { c.DryRun = true }).Up(ctx, "")
		if err != nil {
			t.Fatalf("dry Up: %v", err)
		}
		before := f.readLearnings(t)
		if dry.Learnings == nil || !dry.Learnings.DryRun || len(dry.Learnings.Rekeyed) != 1 || len(dry.Learnings.Merged) != 1 {
			t.Fatalf("dry run report = %+v", dry.Learnings)
		}

		sum, err := f.manager(t).Up(ctx, "")
		if err != nil {
			t.Fatalf("Up: %v", err)
		}
		rep := sum.Learnings
		if rep == nil {
			t.Fatal("Up ran no learnings step")
		}
		want := migrate.LearningsRekey{
			Table: "agno_learnings", Scanned: 9, Keyed: 2, // carol, and the newer acme row
			Rekeyed:           []string{"entity_user_person_alice"},
			Merged:            []string{"entity_user_company_acme"},
			Quarantined:       []string{"entity_user_person_bob"},
			Contaminated:      []string{"entity_user_person_bob"},
			ContaminatedKeyed: []string{db.EntityLearningID("user", "u1", "person", "eve")},
			Unowned:           []string{"entity_user_place_paris"},
			Malformed:         sortedCopy([]string{"entity_user__x", "entity_user_person_dan"}),
		}
		got := *rep
		got.Malformed = sortedCopy(got.Malformed)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("report:\n got %+v\nwant %+v", got, want)
		}
		// The dry run's buckets agree with the real run's.
		for name, pair := range map[string][2][]string{
			"rekeyed": {dry.Learnings.Rekeyed, rep.Rekeyed}, "merged": {dry.Learnings.Merged, rep.Merged},
			"quarantined": {dry.Learnings.Quarantined, rep.Quarantined}, "unowned": {dry.Learnings.Unowned, rep.Unowned},
		} {
			if !slices.Equal(pair[0], pair[1]) {
				t.Errorf("dry run %s = %v, real run %v", name, pair[0], pair[1])
			}
		}
		if dry.Learnings.Scanned != rep.Scanned || dry.Learnings.Keyed != rep.Keyed {
			t.Errorf("dry run scanned/keyed %d/%d, real %d/%d", dry.Learnings.Scanned, dry.Learnings.Keyed, rep.Scanned, rep.Keyed)
		}

		after := f.readLearnings(t)
		if len(before) != 10 || len(after) != 9 {
			t.Fatalf("rows before %d (want 10), after %d (want 9: the merged legacy row is folded away)", len(before), len(after))
		}
		// Re-keyed: same content and timestamps on the owner's key.
		alice := db.EntityLearningID("user", "u1", "person", "alice")
		if _, ok := after["entity_user_person_alice"]; ok {
			t.Error("legacy alice row still there")
		}
		if got := after[alice]; got.User != "u1" || got.Created != 1700000001 || !reflect.DeepEqual(got.Content, before["entity_user_person_alice"].Content) {
			t.Errorf("re-keyed alice = %+v", got)
		}
		// Merged: the newer row wins conflicts, the legacy row fills gaps.
		acme := after[db.EntityLearningID("user", "u2", "company", "acme")]
		wantAcme := map[string]any{
			"user_id": "u2", "name": "Acme", "description": "old description", "legacy_only": float64(1),
			"facts": []any{
				map[string]any{"id": "a", "content": "makes anvils"},
				map[string]any{"id": "c", "content": "based in  utah"},
			},
			"events":     []any{map[string]any{"content": "founded", "date": "1900"}},
			"properties": map[string]any{"size": "huge", "hq": "utah"},
			"aliases":    []any{"ACME Corp"},
			// As Agno: the three collections are always written.
			"relationships": []any{},
		}
		if !reflect.DeepEqual(acme.Content, wantAcme) || acme.Created != 1800000000 {
			t.Errorf("merged acme = %+v\nwant content %v", acme, wantAcme)
		}
		if _, ok := after["entity_user_company_acme"]; ok {
			t.Error("merged legacy row still there")
		}
		// Quarantined: moved under a namespace no store reads, content kept.
		if got := after["entity_quarantined_user_person_bob"]; got.Namespace != "quarantined_user" || got.User != "u1" || got.Content.(map[string]any)["user_id"] != "u3" {
			t.Errorf("quarantined bob = %+v", got)
		}
		for _, id := range []string{"entity_user_place_paris", "entity_user__x", "entity_user_person_dan", "entity_global_person_alice"} {
			if !reflect.DeepEqual(after[id], before[id]) {
				t.Errorf("%s changed: %+v → %+v", id, before[id], after[id])
			}
		}

		// The store reads the moved row under its owner's scope only.
		d, err := f.openDriver(t)
		if err != nil {
			t.Fatalf("open driver: %v", err)
		}
		if l, err := d.GetLearning(db.WithUserScope(ctx, "u1"), alice); err != nil || l.EntityID != "alice" {
			t.Errorf("u1 reads its re-keyed entity: %v %v", l, err)
		}
		if _, err := d.GetLearning(db.WithUserScope(ctx, "u2"), alice); err == nil {
			t.Error("u2 reads u1's re-keyed entity")
		}

		// Stamped 3.0.0: a second Up has nothing to do.
		sts, err := f.manager(t).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sts {
			if s.Kind == migrate.KindLearnings && (!s.UpToDate() || s.Current != migrate.Latest) {
				t.Errorf("learnings status after Up = %+v", s)
			}
		}
		again, err := f.manager(t).Up(ctx, "")
		if err != nil || again.Learnings != nil {
			t.Errorf("second Up = %+v, %v; want no learnings step", again.Learnings, err)
		}

		// Down does not reverse the re-key; it only restamps.
		if _, err := f.manager(t).Down(ctx, "2.5.6"); err != nil {
			t.Fatalf("Down: %v", err)
		}
		if got := f.readLearnings(t); !reflect.DeepEqual(got, after) {
			t.Error("Down changed learnings rows")
		}
	})
}

// TestUp_RekeyPurgesUnrecoverable: with PurgeUnrecoverableLearnings, rows two
// users wrote and rows without an owner are deleted instead of kept.
func TestUp_RekeyPurgesUnrecoverable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[0])
	f.createLearnings(t, legacyLearnings())
	sum, err := f.manager(t, func(c *migrate.Config) { c.PurgeUnrecoverableLearnings = true }).Up(ctx, "")
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	rep := sum.Learnings
	if want := []string{"entity_user_person_bob", "entity_user_place_paris"}; !slices.Equal(sortedCopy(rep.Purged), want) || len(rep.Quarantined) != 0 {
		t.Fatalf("purged %v quarantined %v, want purged %v", rep.Purged, rep.Quarantined, want)
	}
	after := f.readLearnings(t)
	for _, id := range []string{"entity_user_person_bob", "entity_user_place_paris", "entity_quarantined_user_person_bob"} {
		if _, ok := after[id]; ok {
			t.Errorf("%s still there after a purge", id)
		}
	}
	if _, ok := after["entity_user_person_dan"]; !ok {
		t.Error("a malformed row was purged; purge covers contaminated and unowned rows only")
	}
}

// TestUp_RekeyLeavesConflictsAndResumes: a legacy row whose target holds
// content that is not an object stays in place (conflicts), and the rest
// moves; Up is resumable (an interrupted re-key, simulated by unstamping
// after a partial move, converges).
func TestUp_RekeyLeavesConflictsAndResumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[0])
	rows := legacyLearnings()
	rows = append(rows, learningFixture{id: db.EntityLearningID("user", "u1", "person", "zed"), namespace: "user", user: "u1", etype: "person", eid: "zed",
		created: 1, content: `"a string, not an object"`},
		learningFixture{id: "entity_user_person_zed", namespace: "user", user: "u1", etype: "person", eid: "zed", created: 2, content: `{"name":"Zed"}`})
	f.createLearnings(t, rows)
	sum, err := f.manager(t).Up(ctx, "")
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	if !slices.Equal(sum.Learnings.Conflicts, []string{"entity_user_person_zed"}) {
		t.Fatalf("conflicts = %v", sum.Learnings.Conflicts)
	}
	if _, ok := f.readLearnings(t)["entity_user_person_zed"]; !ok {
		t.Fatal("conflicting legacy row was removed")
	}
	// Put one moved row back on its legacy key, as if a crash had stopped
	// the step before it, and unstamp: the next Up moves it once.
	f.exec(t, fmt.Sprintf(`UPDATE %s SET learning_id = 'entity_user_person_alice' WHERE learning_id = '%s'`,
		f.table("agno_learnings"), db.EntityLearningID("user", "u1", "person", "alice")))
	f.exec(t, fmt.Sprintf(`DELETE FROM %s WHERE table_name = 'agno_learnings'`, f.table("agno_schema_versions")))
	sum, err = f.manager(t).Up(ctx, "")
	if err != nil {
		t.Fatalf("second Up: %v", err)
	}
	if !slices.Equal(sum.Learnings.Rekeyed, []string{"entity_user_person_alice"}) || len(sum.Learnings.Merged) != 0 {
		t.Fatalf("resumed re-key = %+v", sum.Learnings)
	}
}
