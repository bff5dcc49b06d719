package agentos

import (
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
)

// Pagination defaults.
const (
	defaultPageLimit = 20
	defaultMaxLimit  = 1000
)

// pageRules describe one list route's query parameters.
type pageRules struct {
	// DefaultLimit (20) and MaxLimit (1000) bound limit.
	DefaultLimit int
	MaxLimit     int
	// SortColumns is the sort_by allow-list; the first is the default. Empty
	// means sorting is not offered (any sort_by is rejected).
	SortColumns []string
	// DefaultOrder is "asc" or "desc" (default "desc").
	DefaultOrder string
}

// parseSortQuery reads sort_by and sort_order, for list routes that sort
// without paginating. A sort_by outside rules.SortColumns or a sort_order
// other than asc/desc is a 422 httpError naming the allowed values, so
// nothing user-written reaches SQL and nothing is silently ignored; with no
// SortColumns the route offers no sorting and both parameters are refused.
// Absent values give the first column and rules.DefaultOrder ("desc" when
// empty).
func parseSortQuery(q url.Values, rules pageRules) (sortBy, order string, err error) {
	if rules.DefaultOrder == "" {
		rules.DefaultOrder = "desc"
	}
	if len(rules.SortColumns) == 0 {
		for _, k := range []string{"sort_by", "sort_order"} {
			if q.Has(k) {
				return "", "", errorf(http.StatusUnprocessableEntity, "%s is not supported on this route; it lists in a fixed order", k)
			}
		}
		return "", "", nil
	}
	sortBy, order = rules.SortColumns[0], rules.DefaultOrder
	if v := q.Get("sort_by"); v != "" {
		if !slices.Contains(rules.SortColumns, v) {
			return "", "", errorf(http.StatusUnprocessableEntity, "sort_by must be one of: %s", strings.Join(rules.SortColumns, ", "))
		}
		sortBy = v
	}
	if v := q.Get("sort_order"); v != "" {
		switch strings.ToLower(v) {
		case "asc", "desc":
			order = strings.ToLower(v)
		default:
			return "", "", errorf(http.StatusUnprocessableEntity, "sort_order must be asc or desc")
		}
	}
	return sortBy, order, nil
}

// pageQuery is a validated page request.
type pageQuery struct {
	Limit     int
	Page      int
	SortBy    string
	SortOrder string
}

// parsePageQuery reads limit, page, sort_by and sort_order. Bad values are a
// 422 httpError: limit outside 1..MaxLimit, page < 1, a page whose offset
// does not fit (checkPageOffset), a sort_by outside the allow-list (so
// nothing user-written reaches SQL), sort_order not asc/desc.
func parsePageQuery(q url.Values, rules pageRules) (pageQuery, error) {
	if rules.DefaultLimit <= 0 {
		rules.DefaultLimit = defaultPageLimit
	}
	if rules.MaxLimit <= 0 {
		rules.MaxLimit = defaultMaxLimit
	}
	pq := pageQuery{Limit: rules.DefaultLimit, Page: 1}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > rules.MaxLimit {
			return pageQuery{}, errorf(http.StatusUnprocessableEntity, "limit must be an integer from 1 to %d", rules.MaxLimit)
		}
		pq.Limit = n
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return pageQuery{}, errorf(http.StatusUnprocessableEntity, "page must be an integer of at least 1")
		}
		pq.Page = n
	}
	if err := checkPageOffset(pq.Page, pq.Limit); err != nil {
		return pageQuery{}, err
	}
	var err error
	if pq.SortBy, pq.SortOrder, err = parseSortQuery(q, rules); err != nil {
		return pageQuery{}, err
	}
	return pq, nil
}

// checkPageOffset is a 422 httpError when the offset of page's first row,
// (page-1)*limit, does not fit in an int64 (db.PageOffsetOverflows, which the
// db front also checks for every list). It answers before a database is
// read, and for the routes that page in memory (knowledge search). page and
// limit must be at least 1.
func checkPageOffset(page, limit int) error {
	if db.PageOffsetOverflows(limit, page) {
		return errorf(http.StatusUnprocessableEntity, "page is too large: (page-1)*limit must be at most %d", int64(math.MaxInt64))
	}
	return nil
}

// pageMeta is the "meta" object of a paginated response.
type pageMeta struct {
	Page         int     `json:"page"`
	Limit        int     `json:"limit"`
	TotalPages   int     `json:"total_pages"`
	TotalCount   int     `json:"total_count"`
	SearchTimeMS float64 `json:"search_time_ms"`
}

// paginated is a paginated response: {"data": [...], "meta": {...}}.
type paginated[T any] struct {
	Data []T      `json:"data"`
	Meta pageMeta `json:"meta"`
}

// newPage builds a page; data is never null in JSON and searchTime is reported
// in milliseconds.
func newPage[T any](data []T, q pageQuery, totalCount int, searchTime time.Duration) paginated[T] {
	if data == nil {
		data = []T{}
	}
	pages := 0
	if q.Limit > 0 && totalCount > 0 {
		pages = (totalCount + q.Limit - 1) / q.Limit
	}
	ms := math.Round(float64(searchTime.Microseconds())/10) / 100
	return paginated[T]{Data: data, Meta: pageMeta{Page: q.Page, Limit: q.Limit, TotalPages: pages, TotalCount: totalCount, SearchTimeMS: ms}}
}

// writePage writes a 200 paginated response.
func writePage[T any](w http.ResponseWriter, data []T, q pageQuery, totalCount int, searchTime time.Duration) {
	writeJSON(w, http.StatusOK, newPage(data, q, totalCount, searchTime))
}
