package lossless

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Unmarshal decodes the JSON object data into the struct v points to and
// returns the members v's own encoding would not write back:
//
//   - members with no field (by exact JSON name; encoding/json would match
//     case-insensitively and lose the original key);
//   - members whose value the field cannot hold (a string where a number is
//     expected): the field is left zero, or set leniently (a number from a
//     numeric or ISO 8601 string, an integer from a float), and the stored form
//     is kept;
//   - members whose decoded field its encoding omits (omitempty: null, false,
//     0, "", [], {}; omitzero: null), and nulls a field without omit options
//     would write as its zero value.
//
// v must point to a struct type without its own UnmarshalJSON (callers pass a
// defined copy of their type, as in `type message Message`). JSON null leaves
// v unchanged. Data that is not an object is an error naming v's type.
func Unmarshal(data []byte, v any) (map[string]json.RawMessage, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("lossless: Unmarshal needs a pointer to a struct, got %T", v))
	}
	rv = rv.Elem()
	// One check of the whole object; the member scan below relies on it.
	if !json.Valid(data) {
		var v any
		return nil, json.Unmarshal(data, &v) // the *json.SyntaxError
	}
	data = bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(data) == 0:
		return nil, &json.UnmarshalTypeError{Value: "empty", Type: rv.Type()}
	case data[0] == 'n':
		return nil, nil // null
	case data[0] != '{':
		return nil, &json.UnmarshalTypeError{Value: kindOf(data[0]), Type: rv.Type()}
	}
	t := tableOf(rv.Type())
	var extra map[string]json.RawMessage
	keep := func(k string, raw []byte) {
		if extra == nil {
			extra = make(map[string]json.RawMessage, 4)
		}
		extra[k] = bytes.Clone(raw) // data is the caller's, not ours to keep
	}
	for key, raw := range members(data) {
		f := t.byName[string(key)]
		if f == nil {
			keep(memberName(key), raw)
			continue
		}
		fv := f.alloc(rv)
		if !f.decode(raw, fv) {
			fv.SetZero()
			if f.lenient {
				setLenient(raw, fv)
			}
			keep(memberName(key), raw)
			continue
		}
		if f.omitted(fv) || !f.omitEmpty && !f.omitZero && string(raw) == "null" || f.lossy && Lossy(raw) {
			keep(memberName(key), raw)
		}
	}
	return extra, nil
}

// members yields the members of the valid JSON object data: each key as
// stored (quotes stripped, escapes kept) and its raw value. A key repeated
// is yielded again; the later one wins, as in encoding/json.
func members(data []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		r := MemberReader{data, skipSpace(data, 1)} // past '{'
		for key, raw, ok := r.Next(); ok; key, raw, ok = r.Next() {
			if !yield(key, raw) {
				return
			}
		}
	}
}

// KeyIs reports whether key, a member name as stored (MemberReader), is name,
// without allocating when the key holds no escape.
func KeyIs(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key) == name
	}
	return memberName(key) == name
}

// memberName unescapes a stored key ("a\u00e9" → "aé").
func memberName(key []byte) string {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s) != nil {
		return string(key)
	}
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] ('"').
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default:
		for i < len(b) && strings.IndexByte(",}] \t\r\n", b[i]) < 0 {
			i++
		}
		return i
	}
}

func kindOf(c byte) string {
	switch c {
	case '"':
		return "string"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	default:
		return "number"
	}
}

// Marshal encodes the struct v points to, then the members of extra its
// fields do not write: unknown members, and members of fields it omits
// (their stored null, false, [] …); a stored null also replaces the zero
// value a field without omitempty writes. A field set since it was read wins
// over its stored form, except that a leniently read field still holding the
// value read is written in the form it was read in. v must point to a struct
// without its own MarshalJSON, and may be modified (callers pass a copy).
// The result is compact, valid JSON (an invalid Extra value is an error).
func Marshal(v any, extra map[string]json.RawMessage) ([]byte, error) {
	if len(extra) == 0 {
		return Encode(v)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("lossless: Marshal needs a pointer to a struct, got %T", v))
	}
	rv = rv.Elem()
	t := tableOf(rv.Type())
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var tail []string
	var replace []string // members of non-omitempty fields: the slow path
	for _, k := range keys {
		f := t.byName[k]
		if f == nil {
			tail = append(tail, k)
			continue
		}
		fv, ok := f.of(rv)
		if !ok { // promoted through a nil embedded pointer: not written
			tail = append(tail, k)
			continue
		}
		if !f.omitted(fv) && (f.lenient && sameLenient(extra[k], fv) || f.lossy && sameAny(extra[k], fv)) {
			fv.SetZero()
		}
		switch {
		case f.omitted(fv):
			tail = append(tail, k)
		case !f.omitEmpty && !f.omitZero && isEmpty(fv):
			// Kept only when stored as null or in a form the field cannot
			// hold: Go would write its zero value instead.
			replace = append(replace, k)
		}
	}
	b, err := Encode(v)
	if err != nil {
		return nil, err
	}
	if len(replace) > 0 {
		return rebuild(b, extra, tail, replace)
	}
	if len(tail) == 0 {
		return b, nil
	}
	return splice(b, extra, tail)
}

// splice appends the named members of extra to the JSON object b.
func splice(b []byte, extra map[string]json.RawMessage, keys []string) ([]byte, error) {
	n := len(b)
	for _, k := range keys {
		n += len(k) + len(extra[k]) + 4
	}
	out := make([]byte, 0, n)
	out = append(out, b[:len(b)-1]...)
	first := len(b) == 2 // "{}"
	for _, k := range keys {
		if !first {
			out = append(out, ',')
		}
		first = false
		kb, err := Encode(k)
		if err != nil {
			return nil, err
		}
		out = append(out, kb...)
		out = append(out, ':')
		// Compacted (and so checked): the result is valid, compact JSON
		// even when called directly, not through an encoder that checks it.
		buf := bytes.NewBuffer(out)
		if err := json.Compact(buf, extra[k]); err != nil {
			return nil, fmt.Errorf("lossless: member %q: %w", k, err)
		}
		out = buf.Bytes()
	}
	return append(out, '}'), nil
}

// rebuild replaces members encoding/json wrote for empty non-omitempty fields
// with their stored form (e.g. a stored null where Go writes ""). Rare: only
// data another writer stored oddly takes this path.
func rebuild(b []byte, extra map[string]json.RawMessage, add, replace []string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range add {
		m[k] = extra[k]
	}
	for _, k := range replace {
		m[k] = extra[k]
	}
	return Encode(m)
}

// Encode is json.Marshal without escaping <, > and &: a MarshalJSON method's
// output is escaped (or not) by the encoder that calls it, as that encoder is
// set, so escaping inside would be applied whatever the caller asked for.
func Encode(v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	b := e.buf.Bytes()
	return bytes.Clone(b[:len(b)-1]), nil // Encode appends a newline
}

// encoder is a reusable json.Encoder writing into its own buffer: a
// MarshalJSON method runs for every message of every run stored.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// field is one JSON member a struct models.
type field struct {
	index []int
	// viaPointer: the field is promoted through an embedded pointer (a
	// stored team task event's members, in Event's *TaskEvent), which
	// reading a member of it allocates, as encoding/json does.
	viaPointer bool
	omitEmpty  bool
	omitZero   bool
	// lenient: an int or float field, which may be read from a float or a
	// string (see setLenient).
	lenient bool
	// fast: the field's kind may be decoded without encoding/json.
	fast reflect.Kind
	// lossy: the field holds values encoding/json may read a member into
	// and write back changed (see Lossy): interface values (numbers read as
	// float64) and floats, directly or in slices, arrays, maps and pointers.
	lossy bool
}

type table struct{ byName map[string]*field }

var tables sync.Map // reflect.Type → *table

func tableOf(t reflect.Type) *table {
	if v, ok := tables.Load(t); ok {
		return v.(*table)
	}
	tb := &table{byName: map[string]*field{}}
	for _, sf := range reflect.VisibleFields(t) {
		viaPointer, settable := throughPointer(t, sf.Index)
		if !sf.IsExported() || !settable {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" && (sf.Type.Kind() == reflect.Struct || sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.Struct) {
			continue // its promoted fields are listed on their own
		}
		if name == "" {
			name = sf.Name
		}
		if _, dup := tb.byName[name]; dup {
			continue // the shallower field wins, as in encoding/json
		}
		f := &field{index: sf.Index, viaPointer: viaPointer, omitEmpty: hasOption(opts, "omitempty"), omitZero: hasOption(opts, "omitzero")}
		f.lossy = lossyValues(sf.Type)
		k := sf.Type.Kind()
		custom := reflect.PointerTo(sf.Type).Implements(unmarshalerType) || reflect.PointerTo(sf.Type).Implements(textUnmarshalerType)
		if !custom {
			switch k {
			case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Float32, reflect.Float64:
				f.fast = k
			}
			f.lenient = isInt(k) || k == reflect.Float32 || k == reflect.Float64
		}
		tb.byName[name] = f
	}
	v, _ := tables.LoadOrStore(t, tb)
	return v.(*table)
}

// lossyValues reports whether values of t may hold numbers encoding/json
// reads from a member and writes back changed (see Lossy): interface values
// and floats. Values a custom UnmarshalJSON reads do not count: their type
// keeps what it reads.
func lossyValues(t reflect.Type) bool {
	for {
		if reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
			return false
		}
		switch t.Kind() {
		case reflect.Interface, reflect.Float32, reflect.Float64:
			return true
		case reflect.Slice:
			if t.Elem().Kind() == reflect.Uint8 {
				return false // []byte: base64
			}
			t = t.Elem()
		case reflect.Pointer, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return false
		}
	}
}

// sameAny reports whether fv still holds what encoding/json reads from raw.
func sameAny(raw json.RawMessage, fv reflect.Value) bool {
	fresh := reflect.New(fv.Type())
	if json.Unmarshal(raw, fresh.Interface()) != nil {
		return false
	}
	return reflect.DeepEqual(fresh.Elem().Interface(), fv.Interface())
}

// Lossy reports whether reading the JSON text raw into Go values (interface
// values, float64, strings) and writing them back with encoding/json changes
// what Python's json module, Agno's reader, reads from it:
//
//   - a number float64 cannot give back (an integer beyond 2^53, more digits
//     than a float keeps);
//   - a float whose value is an integer (2.0, 1e+16, -0.0): Go writes it as
//     an integer (2), which Python reads as an int, not a float.
//
// A lone UTF-16 surrogate escape ("\udcff", which Python writes for text
// decoded with surrogateescape) is not kept either, although Go reads it as
// U+FFFD: Postgres and MariaDB refuse it in a JSON column, so a row holding
// one could not be written there.
func Lossy(raw []byte) bool {
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '-' || c >= '0' && c <= '9':
			j := i
			for j < len(raw) && strings.IndexByte("0123456789+-.eE", raw[j]) >= 0 {
				j++
			}
			if tok := string(raw[i:j]); inexact(tok) || integralFloat(tok) {
				return true
			}
			i = j - 1
		}
	}
	return false
}

// integralFloat reports whether the number tok, written as a float (with a
// fraction or an exponent), has an integer value encoding/json writes
// without either (|x| < 1e21).
func integralFloat(tok string) bool {
	if !strings.ContainsAny(tok, ".eE") {
		return false
	}
	x, err := strconv.ParseFloat(tok, 64)
	return err == nil && x == math.Trunc(x) && math.Abs(x) < 1e21
}

// inexact reports whether the number tok changes when read as a float64 and
// written in the shortest form that reads back the same float64.
func inexact(tok string) bool {
	digits := 0
	for _, c := range tok {
		if c == 'e' || c == 'E' {
			break
		}
		if c >= '0' && c <= '9' && (digits > 0 || c != '0') {
			digits++
		}
	}
	if digits <= 15 { // float64 keeps 15 significant decimal digits
		return false
	}
	x, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return true
	}
	a, _, err1 := big.ParseFloat(tok, 10, 512, big.ToNearestEven)
	b, _, err2 := big.ParseFloat(strconv.FormatFloat(x, 'g', -1, 64), 10, 512, big.ToNearestEven)
	return err1 != nil || err2 != nil || a.Cmp(b) != 0
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// throughPointer reports whether a promoted field is reached through an
// embedded pointer (which may be nil), and whether every such pointer can
// be set (not an unexported field: encoding/json cannot allocate those).
func throughPointer(t reflect.Type, index []int) (through, settable bool) {
	settable = true
	for _, i := range index[:len(index)-1] {
		sf := t.Field(i)
		t = sf.Type
		if t.Kind() == reflect.Pointer {
			through = true
			settable = settable && sf.IsExported()
			t = t.Elem()
		}
	}
	return through, settable
}

// alloc returns the field in rv, the embedded pointers on its way allocated.
func (f *field) alloc(rv reflect.Value) reflect.Value {
	if !f.viaPointer {
		return rv.FieldByIndex(f.index)
	}
	v := rv
	for _, i := range f.index {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v
}

// of returns the field in rv; ok is false when an embedded pointer on its
// way is nil (encoding/json writes none of its fields).
func (f *field) of(rv reflect.Value) (v reflect.Value, ok bool) {
	if !f.viaPointer {
		return rv.FieldByIndex(f.index), true
	}
	v, err := rv.FieldByIndexErr(f.index)
	return v, err == nil
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

func isInt(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Int64
}

// decode stores raw in fv, reporting false when fv cannot hold it. Plain
// strings, booleans and numbers skip encoding/json: they are most members.
func (f *field) decode(raw json.RawMessage, fv reflect.Value) bool {
	switch f.fast {
	case reflect.String:
		if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
			fv.SetString(string(raw[1 : len(raw)-1]))
			return true
		}
	case reflect.Bool:
		switch string(raw) {
		case "true":
			fv.SetBool(true)
			return true
		case "false":
			fv.SetBool(false)
			return true
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && !fv.OverflowInt(n) {
			fv.SetInt(n)
			return true
		}
	case reflect.Float32, reflect.Float64:
		if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
			if x, err := strconv.ParseFloat(string(raw), 64); err == nil && !fv.OverflowFloat(x) {
				fv.SetFloat(x)
				return true
			}
		}
	}
	return json.Unmarshal(raw, fv.Addr().Interface()) == nil
}

// setLenient reads an int or float field from a form Agno has written that
// encoding/json refuses: an integer stored as a float (truncated), a number
// in a string, or an ISO 8601 time in a float field (epoch seconds).
func setLenient(raw json.RawMessage, fv reflect.Value) {
	if x, ok := lenientNumber(raw, fv.Kind()); ok {
		if isInt(fv.Kind()) {
			if n := int64(x); float64(n) == math.Trunc(x) && !fv.OverflowInt(n) {
				fv.SetInt(n)
			}
			return
		}
		if !fv.OverflowFloat(x) {
			fv.SetFloat(x)
		}
	}
}

// sameLenient reports whether fv still holds what setLenient read from raw.
func sameLenient(raw json.RawMessage, fv reflect.Value) bool {
	x, ok := lenientNumber(raw, fv.Kind())
	if !ok {
		return false
	}
	if isInt(fv.Kind()) {
		return fv.Int() == int64(x)
	}
	return fv.Float() == x
}

func lenientNumber(raw json.RawMessage, k reflect.Kind) (float64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	if raw[0] != '"' {
		x, err := strconv.ParseFloat(string(raw), 64)
		return x, err == nil && !math.IsInf(x, 0) && !math.IsNaN(x)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	s = strings.TrimSpace(s)
	if x, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(x, 0) && !math.IsNaN(x) {
		return x, true
	}
	if k == reflect.Float32 || k == reflect.Float64 {
		if t, ok := parseISOTime(s); ok {
			return float64(t.UnixMicro()) / 1e6, true
		}
	}
	return 0, false
}

// isoLayouts are the forms Python's datetime.isoformat writes; a time
// without an offset is read as UTC.
var isoLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

func parseISOTime(s string) (time.Time, bool) {
	if len(s) < len("2006-01-02T15:04") || s[4] != '-' {
		return time.Time{}, false
	}
	for _, l := range isoLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// omitted reports whether encoding/json leaves the field out.
func (f *field) omitted(v reflect.Value) bool {
	return f.omitEmpty && isEmpty(v) || f.omitZero && isZero(v)
}

// isZero is encoding/json's omitzero test.
func isZero(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return true
		}
		return z.IsZero()
	}
	return v.IsZero()
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
