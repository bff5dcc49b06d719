package db

import (
	"bytes"
	"encoding/json"
)

// ScheduleColumn is a mutable column of agno_schedules: one an edit may
// change (EditSchedule). The columns the scheduler owns (next_run_at
// aside, which an edit re-derives), the provenance of creation, the lock
// and created_at are not among them.
type ScheduleColumn struct {
	// Name is the column's name.
	Name string
	// Nullable says a zero value is stored as NULL (Agno's absent value).
	Nullable bool
	// field points at the column's field of s: a *string, *int64, *bool
	// or *json.RawMessage.
	field func(s *Schedule) any
}

// ScheduleMutableColumns are the columns EditSchedule writes, the one
// list every driver reads; updated_at, which every edit sets, is not in
// it.
var ScheduleMutableColumns = []ScheduleColumn{
	{"name", false, func(s *Schedule) any { return &s.Name }},
	{"description", true, func(s *Schedule) any { return &s.Description }},
	{"method", false, func(s *Schedule) any { return &s.Method }},
	{"endpoint", false, func(s *Schedule) any { return &s.Endpoint }},
	{"payload", true, func(s *Schedule) any { return &s.Payload }},
	{"cron_expr", false, func(s *Schedule) any { return &s.CronExpr }},
	{"timezone", false, func(s *Schedule) any { return &s.Timezone }},
	{"timeout_seconds", false, func(s *Schedule) any { return &s.TimeoutSeconds }},
	{"max_retries", false, func(s *Schedule) any { return &s.MaxRetries }},
	{"retry_delay_seconds", false, func(s *Schedule) any { return &s.RetryDelaySeconds }},
	{"enabled", false, func(s *Schedule) any { return &s.Enabled }},
	{"next_run_at", true, func(s *Schedule) any { return &s.NextRunAt }},
	{"disabled_reason", true, func(s *Schedule) any { return &s.DisabledReason }},
	{"target_type", true, func(s *Schedule) any { return &s.TargetType }},
	{"target_id", true, func(s *Schedule) any { return &s.TargetID }},
	{"updated_by_run_id", true, func(s *Schedule) any { return &s.UpdatedByRunID }},
	{"updated_by_session_id", true, func(s *Schedule) any { return &s.UpdatedBySessionID }},
}

// Value is the column's value in s: a string, int64, bool or
// json.RawMessage.
func (c ScheduleColumn) Value(s *Schedule) any {
	switch p := c.field(s).(type) {
	case *string:
		return *p
	case *int64:
		return *p
	case *bool:
		return *p
	case *json.RawMessage:
		return *p
	}
	panic("db: schedule column " + c.Name + " has a field of an unknown type")
}

// Copy sets the column's field of dst to its value in src.
func (c ScheduleColumn) Copy(dst, src *Schedule) {
	switch p := c.field(dst).(type) {
	case *string:
		*p = *c.field(src).(*string)
	case *int64:
		*p = *c.field(src).(*int64)
	case *bool:
		*p = *c.field(src).(*bool)
	case *json.RawMessage:
		*p = bytes.Clone(*c.field(src).(*json.RawMessage))
	default:
		panic("db: schedule column " + c.Name + " has a field of an unknown type")
	}
}

// differs reports whether the column's value differs between a and b
// (a payload byte for byte).
func (c ScheduleColumn) differs(a, b *Schedule) bool {
	if p, ok := c.field(a).(*json.RawMessage); ok {
		return !bytes.Equal(*p, *c.field(b).(*json.RawMessage))
	}
	return c.Value(a) != c.Value(b)
}

// ScheduleEdits lists the mutable columns whose value differs between
// read and edited: the columns an edit writes.
func ScheduleEdits(read, edited *Schedule) []ScheduleColumn {
	var out []ScheduleColumn
	for _, c := range ScheduleMutableColumns {
		if c.differs(read, edited) {
			out = append(out, c)
		}
	}
	return out
}
