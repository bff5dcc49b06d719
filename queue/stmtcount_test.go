package queue_test

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// BenchmarkThroughput_PostgresStatements is BenchmarkThroughput_Postgres
// with a pgx tracer on the pool: statements and round trips per run, and
// (with -test.v) the statements per run by kind, River's included.
func BenchmarkThroughput_PostgresStatements(b *testing.B) {
	tr := &roundTrips{}
	d := tracedPostgres(b, "stmts", tr)
	benchThroughput(b, d, nil, func() int64 {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return int64(len(tr.alone) + len(tr.batched))
	}, backendCPU(b, d), tr.roundTrips, nil)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	kinds := map[string][2]int{}
	for _, q := range tr.alone {
		k := kinds[stmtKind(q)]
		k[0]++
		kinds[stmtKind(q)] = k
	}
	for _, q := range tr.batched {
		k := kinds[stmtKind(q)]
		k[1]++
		kinds[stmtKind(q)] = k
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		a, c := kinds[names[i]], kinds[names[j]]
		return a[0]+a[1] > c[0]+c[1]
	})
	var sb strings.Builder
	for _, k := range names {
		c := kinds[k]
		if float64(c[0]+c[1])/float64(b.N) < 0.01 {
			continue
		}
		fmt.Fprintf(&sb, "%6.2f alone %6.2f batched  %s\n", float64(c[0])/float64(b.N), float64(c[1])/float64(b.N), k)
	}
	b.Logf("statements per run (N=%d):\n%s", b.N, sb.String())
}

var (
	stmtSchema = regexp.MustCompile(`"agentry_test_[a-z]+_[0-9]+"\.`)
	stmtSpace  = regexp.MustCompile(`\s+`)
)

// stmtKind is a statement's text without its schema, on one line, cut.
func stmtKind(q string) string {
	q = stmtSpace.ReplaceAllString(stmtSchema.ReplaceAllString(q, ""), " ")
	if len(q) > 110 {
		q = q[:110]
	}
	return q
}
