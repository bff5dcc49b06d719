package agentos

import (
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Pagination defaults.
const (
	DefaultPageLimit = 20
	DefaultMaxLimit  = 1000
)

// PageRules describe one list route's query parameters.
type PageRules struct {
	// DefaultLimit (20) and MaxLimit (1000) bound limit.
	DefaultLimit int
	MaxLimit     int
	// SortColumns is the sort_by allow-list; the first is the default. Empty
	// means sorting is not offered (any sort_by is rejected).
	SortColumns []string
	// DefaultOrder is "asc" or "desc" (default "desc").
	DefaultOrder string
}

// PageQuery is a validated page request.
type PageQuery struct {
	Limit     int
	Page      int
	SortBy    string
	SortOrder string
}

// ParsePageQuery reads limit, page, sort_by and sort_order. Bad values are a
// 422 HTTPError: limit outside 1..MaxLimit, page < 1, a sort_by outside the
// allow-list (so nothing user-written reaches SQL), sort_order not asc/desc.
func ParsePageQuery(q url.Values, rules PageRules) (PageQuery, error) {
	if rules.DefaultLimit <= 0 {
		rules.DefaultLimit = DefaultPageLimit
	}
	if rules.MaxLimit <= 0 {
		rules.MaxLimit = DefaultMaxLimit
	}
	if rules.DefaultOrder == "" {
		rules.DefaultOrder = "desc"
	}
	pq := PageQuery{Limit: rules.DefaultLimit, Page: 1, SortOrder: rules.DefaultOrder}
	if len(rules.SortColumns) > 0 {
		pq.SortBy = rules.SortColumns[0]
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > rules.MaxLimit {
			return PageQuery{}, Errorf(http.StatusUnprocessableEntity, "limit must be an integer from 1 to %d", rules.MaxLimit)
		}
		pq.Limit = n
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return PageQuery{}, Errorf(http.StatusUnprocessableEntity, "page must be an integer of at least 1")
		}
		pq.Page = n
	}
	if v := q.Get("sort_by"); v != "" {
		if !slices.Contains(rules.SortColumns, v) {
			if len(rules.SortColumns) == 0 {
				return PageQuery{}, Errorf(http.StatusUnprocessableEntity, "sort_by is not supported here")
			}
			return PageQuery{}, Errorf(http.StatusUnprocessableEntity, "sort_by must be one of: %s", strings.Join(rules.SortColumns, ", "))
		}
		pq.SortBy = v
	}
	if v := q.Get("sort_order"); v != "" {
		switch strings.ToLower(v) {
		case "asc", "desc":
			pq.SortOrder = strings.ToLower(v)
		default:
			return PageQuery{}, Errorf(http.StatusUnprocessableEntity, "sort_order must be asc or desc")
		}
	}
	return pq, nil
}

// PageMeta is the "meta" object of a paginated response.
type PageMeta struct {
	Page         int     `json:"page"`
	Limit        int     `json:"limit"`
	TotalPages   int     `json:"total_pages"`
	TotalCount   int     `json:"total_count"`
	SearchTimeMS float64 `json:"search_time_ms"`
}

// Page is a paginated response: {"data": [...], "meta": {...}}.
type Page[T any] struct {
	Data []T      `json:"data"`
	Meta PageMeta `json:"meta"`
}

// NewPage builds a page; data is never null in JSON and searchTime is reported
// in milliseconds.
func NewPage[T any](data []T, q PageQuery, totalCount int, searchTime time.Duration) Page[T] {
	if data == nil {
		data = []T{}
	}
	pages := 0
	if q.Limit > 0 && totalCount > 0 {
		pages = (totalCount + q.Limit - 1) / q.Limit
	}
	ms := math.Round(float64(searchTime.Microseconds())/10) / 100
	return Page[T]{Data: data, Meta: PageMeta{Page: q.Page, Limit: q.Limit, TotalPages: pages, TotalCount: totalCount, SearchTimeMS: ms}}
}

// WritePage writes a 200 paginated response.
func WritePage[T any](w http.ResponseWriter, data []T, q PageQuery, totalCount int, searchTime time.Duration) {
	WriteJSON(w, http.StatusOK, NewPage(data, q, totalCount, searchTime))
}
