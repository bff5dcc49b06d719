package sqlstore

import (
	"iter"
	"strings"

	"github.com/agentryhq/agentry/db"
)

func splitCols(cols string) []string {
	parts := strings.Split(cols, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// sortCol maps a validated sort column to SQL, falling back to def.
func sortCol(col, def string, allowed ...string) string {
	for _, a := range allowed {
		if a == col {
			return a
		}
	}
	return def
}

func dir(order string) string {
	if strings.EqualFold(order, db.Desc) {
		return "DESC"
	}
	return "ASC"
}

func chunks[T any](xs []T, n int) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		for len(xs) > 0 {
			k := min(n, len(xs))
			if !yield(xs[:k]) {
				return
			}
			xs = xs[k:]
		}
	}
}
