package trace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/trace"
)

// A span whose name, status message, attribute or root ids are longer
// than a column holds (MySQL's VARCHAR(255) and TEXT) or not storable text
// (a NUL, invalid UTF-8) must not lose the other traces of its batch: the
// store bounds them the same on every driver, and stores both traces.
func TestStore_OverlongSpanDoesNotLoseTheBatch(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *db.DB{"sqlite": testdbs.SQLite, "postgres": testdbs.Postgres, "mysql": testdbs.MySQL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			st, err := trace.NewStore(trace.StoreConfig{DB: d, FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(st))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			tr := tp.Tracer("test")
			ctx := context.Background()

			_, good := tr.Start(ctx, "good", oteltrace.WithAttributes(trace.AttrUserID.String("alice")))
			good.End()
			longName := strings.Repeat("ü", 3000) + "\x00\xff"
			_, bad := tr.Start(ctx, longName, oteltrace.WithAttributes(trace.AttrUserID.String(strings.Repeat("u", 300)),
				attribute.String("big", strings.Repeat("x", trace.MaxAttributeBytes+10)), attribute.String("nul", "a\x00b")))
			bad.SetStatus(codes.Error, strings.Repeat("e", 100_000))
			bad.End()
			if err := tp.ForceFlush(ctx); err != nil {
				t.Fatal(err)
			}
			if st.Failed() != 0 || st.Written() != 2 {
				t.Fatalf("written %d, failed %d spans: want both written", st.Written(), st.Failed())
			}
			g, err := d.GetTrace(ctx, good.SpanContext().TraceID().String(), "")
			if err != nil || g.Name != "good" || g.UserID != "alice" {
				t.Fatalf("the good trace: %+v, %v", g, err)
			}
			b, err := d.GetTrace(ctx, bad.SpanContext().TraceID().String(), "")
			if err != nil {
				t.Fatalf("the over-long trace: %v", err)
			}
			if n := utf8.RuneCountInString(b.Name); n != trace.MaxNameChars || !strings.HasPrefix(b.Name, "üü") || !strings.HasSuffix(b.Name, "…") {
				t.Fatalf("trace name of %d characters: %.40q…", n, b.Name)
			}
			if b.UserID != "" {
				t.Fatalf("an over-long user id was stored (cut?): %q", b.UserID)
			}
			spans, err := d.Spans(ctx, b.TraceID)
			if err != nil || len(spans) != 1 {
				t.Fatalf("spans %v, %v", spans, err)
			}
			sp := spans[0]
			if sp.Name != b.Name || len(sp.StatusMessage) > trace.MaxStatusMessageBytes+64 || !strings.Contains(sp.StatusMessage, "truncated") {
				t.Fatalf("span name %.40q, status message of %d bytes", sp.Name, len(sp.StatusMessage))
			}
			var attrs map[string]any
			if err := json.Unmarshal(sp.Attributes, &attrs); err != nil {
				t.Fatal(err)
			}
			if big, _ := attrs["big"].(string); len(big) > trace.MaxAttributeBytes+64 || !strings.Contains(big, "truncated") {
				t.Fatalf("attribute big of %d bytes", len(big))
			}
			if nul, _ := attrs["nul"].(string); nul != "a\uFFFDb" {
				t.Fatalf("attribute nul %q", nul)
			}
		})
	}
}

// A span the database refuses for a reason no bound foresees (here a
// trigger) loses its own trace only: the store writes the batch again
// trace by trace.
func TestStore_RefusedSpanLosesOnlyItsTrace(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		open    func(testing.TB) *db.DB
		trigger string
	}{
		"sqlite": {testdbs.SQLite, `CREATE TRIGGER refuse_poison BEFORE INSERT ON "%s" WHEN NEW.name = 'poison' BEGIN SELECT RAISE(ABORT, 'poison span'); END`},
		"mysql": {testdbs.MySQL, "CREATE TRIGGER refuse_poison BEFORE INSERT ON `%s` FOR EACH ROW BEGIN IF NEW.name = 'poison' THEN " +
			"SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poison span'; END IF; END"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := tc.open(t)
			ss, ok := sqlstore.FromDB(d)
			if !ok {
				t.Fatal("not an SQL store")
			}
			if _, err := ss.SQL().Exec(fmt.Sprintf(tc.trigger, ss.Tables().Spans)); err != nil {
				t.Fatal(err)
			}
			st, err := trace.NewStore(trace.StoreConfig{DB: d, FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(st))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			tr := tp.Tracer("test")
			ctx := context.Background()
			var ids []string
			for _, n := range []string{"first", "poison", "last"} {
				_, sp := tr.Start(ctx, n)
				sp.End()
				ids = append(ids, sp.SpanContext().TraceID().String())
			}
			if err := tp.ForceFlush(ctx); err != nil {
				t.Fatal(err)
			}
			if st.Written() != 2 || st.Failed() != 1 {
				t.Fatalf("written %d, failed %d spans: want 2 and 1", st.Written(), st.Failed())
			}
			for i, id := range ids {
				_, err := d.GetTrace(ctx, id, "")
				if (err == nil) != (i != 1) {
					t.Errorf("trace %d: err %v", i, err)
				}
			}
		})
	}
}

// Large spans must not lose their trace on MySQL/MariaDB, which refuse a
// value larger than max_allowed_packet (16 MiB by default on MariaDB):
// 40 spans with two attributes at MaxAttributeBytes (20 MiB in one batch)
// are stored, and a span with 70 such attributes (~18 MiB) keeps its
// attributes within MaxSpanAttributesBytes, the rest cut to the marker.
func TestStore_LargeSpansKeepTheirTrace(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *db.DB{"sqlite": testdbs.SQLite, "postgres": testdbs.Postgres, "mysql": testdbs.MySQL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			st, err := trace.NewStore(trace.StoreConfig{DB: d, FlushInterval: time.Hour, BatchSize: 128})
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(st))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			tr := tp.Tracer("test")
			ctx, root := tr.Start(context.Background(), "root")
			big := strings.Repeat("x", trace.MaxAttributeBytes)
			// 20 MiB: over the 16 MiB packet, and no more (64 spans, 32 MiB,
			// took the read back past the tests' one-minute query bound on
			// a loaded machine)
			const n = 40
			for i := range n {
				_, sp := tr.Start(ctx, fmt.Sprintf("child-%d", i), oteltrace.WithAttributes(
					attribute.String("input.value", big), attribute.String("output.value", big)))
				sp.End()
			}
			var many []attribute.KeyValue
			for i := range 70 {
				many = append(many, attribute.String(fmt.Sprintf("a%d", i), big))
			}
			_, huge := tr.Start(ctx, "huge", oteltrace.WithAttributes(many...))
			huge.End()
			root.End()
			if err := tp.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			if st.Failed() != 0 || st.Written() != n+2 {
				t.Fatalf("written %d, failed %d spans: want all %d written", st.Written(), st.Failed(), n+2)
			}
			spans, err := d.Spans(context.Background(), root.SpanContext().TraceID().String())
			if err != nil || len(spans) != n+2 {
				t.Fatalf("%d spans stored, %v", len(spans), err)
			}
			for _, sp := range spans {
				switch {
				case sp.Name == "huge":
					var attrs map[string]string
					if err := json.Unmarshal(sp.Attributes, &attrs); err != nil {
						t.Fatal(err)
					}
					full, cut := 0, 0
					for _, v := range attrs {
						switch {
						case v == big:
							full++
						case strings.HasPrefix(v, "…[truncated: 0 of 262144 bytes]"):
							cut++
						}
					}
					if want := trace.MaxSpanAttributesBytes / trace.MaxAttributeBytes; full != want || cut != 70-want {
						t.Fatalf("huge span: %d full and %d cut attributes, want %d and %d", full, cut, want, 70-want)
					}
					if len(sp.Attributes) > trace.MaxSpanAttributesBytes+70*64 {
						t.Fatalf("huge span: attributes of %d bytes", len(sp.Attributes))
					}
				case sp.Name != "root" && len(sp.Attributes) < 2*trace.MaxAttributeBytes:
					t.Fatalf("span %s: attributes of %d bytes", sp.Name, len(sp.Attributes))
				}
			}
		})
	}
}
