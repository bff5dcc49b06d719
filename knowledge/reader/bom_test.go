package reader

import (
	"strings"
	"testing"
)

// A UTF-8 byte order mark (Windows Notepad, Excel's "CSV UTF-8") is not
// text: a JSON file with one was refused as malformed, a CSV's first column
// was named "\ufeffname", and a Markdown file's first heading was not a
// heading to the chunker.
func TestRead_ByteOrderMarkIsDropped(t *testing.T) {
	t.Parallel()
	const bom = "\ufeff"
	cases := []struct {
		kind, in, want string
	}{
		{JSON, bom + `{"a":"b"}`, "a: b"},
		{CSV, bom + "name,age\nada,36\n", "name: ada, age: 36"},
		{Markdown, bom + "# Title\nbody", "# Title"},
		{Text, bom + "hello", "hello"},
		{HTML, bom + "<h1>Title</h1>", "# Title"},
	}
	for _, c := range cases {
		got, err := Read(c.kind, []byte(c.in))
		if err != nil {
			t.Errorf("%s: %v", c.kind, err)
			continue
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want it to start with %q", c.kind, got, c.want)
		}
	}
	if _, err := Read(Text, []byte(bom+" \n")); err != ErrEmpty {
		t.Errorf("a byte order mark alone: err %v, want ErrEmpty", err)
	}
}
