package db

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestScheduleMutableColumns_OneListCoversEveryEditableField: every field
// of Schedule is either a mutable column of the one list the drivers read
// (and Copy and Value reach that very field) or one an edit must never
// write (the scheduler's lock, the owner, the creation provenance, the
// stamps). And no update writes a whole schedule row: EditSchedule is the
// only one. Before, the memory and SQL drivers each listed the columns,
// and UpdateSchedule wrote all of them back, next_run_at and enabled
// included, over a concurrent firing or disable.
func TestScheduleMutableColumns_OneListCoversEveryEditableField(t *testing.T) {
	t.Parallel()
	notEditable := map[string]bool{"ID": true, "LockedBy": true, "LockedAt": true, "UserID": true, "ManagedBy": true,
		"CreatedByRunID": true, "CreatedBySessionID": true, "CreatedAt": true, "UpdatedAt": true}
	typ := reflect.TypeFor[Schedule]()
	listed := map[string]string{} // field: column
	for _, c := range ScheduleMutableColumns {
		var s Schedule
		p := reflect.ValueOf(c.field(&s))
		field := ""
		for i := range typ.NumField() {
			if reflect.ValueOf(&s).Elem().Field(i).Addr().Pointer() == p.Pointer() {
				field = typ.Field(i).Name
			}
		}
		if field == "" || listed[field] != "" {
			t.Fatalf("column %s: field %q (listed as %q)", c.Name, field, listed[field])
		}
		listed[field] = c.Name
		// Copy sets the field to the source's value; Value reads it.
		var src, dst Schedule
		f := reflect.ValueOf(&src).Elem().FieldByName(field)
		switch f.Kind() {
		case reflect.String:
			f.SetString("v")
		case reflect.Int64:
			f.SetInt(7)
		case reflect.Bool:
			f.SetBool(true)
		default:
			f.Set(reflect.ValueOf(json.RawMessage(`{"a":1}`)))
		}
		c.Copy(&dst, &src)
		if !reflect.DeepEqual(dst, src) || !reflect.DeepEqual(c.Value(&dst), f.Interface()) {
			t.Errorf("column %s: Copy gave %+v, Value %v", c.Name, dst, c.Value(&dst))
		}
		if got := ScheduleEdits(&Schedule{}, &src); len(got) != 1 || got[0].Name != c.Name {
			t.Errorf("column %s: the edits of a change to it alone are %v", c.Name, got)
		}
	}
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if (listed[name] != "") == notEditable[name] {
			t.Errorf("field %s: in the mutable list %v, not editable %v: it must be exactly one", name, listed[name] != "", notEditable[name])
		}
	}
	for _, m := range []reflect.Type{reflect.TypeFor[*DB](), reflect.TypeFor[ScheduleDriver]()} {
		if _, ok := m.MethodByName("UpdateSchedule"); ok {
			t.Errorf("%v has UpdateSchedule, a write of a whole schedule row", m)
		}
	}
}
