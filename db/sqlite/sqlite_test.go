package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/sqlite"
)

func openTemp(t *testing.T) *db.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestConformance(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, openTemp)
}

func TestConformanceSQL(t *testing.T) {
	t.Parallel()
	dbtest.RunSQL(t, openTemp)
}

func TestConformanceTraces(t *testing.T) {
	t.Parallel()
	dbtest.RunTraces(t, openTemp)
}

// The store's whole contract holds on an exclusive file (Config.Exclusive).
func TestConformance_Exclusive(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T) *db.DB {
		d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "excl.db"), Exclusive: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	dbtest.Run(t, open)
	dbtest.RunSQL(t, open)
}

func TestConformance_InMemory(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T) *db.DB {
		d, err := sqlite.Open(context.Background(), sqlite.Config{Path: ":memory:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	})
}
