package tool_test

import (
	"strings"
	"testing"

	"github.com/agentryhq/agentry/tool"
)

func TestToolkit_SelectedFiltersByName(t *testing.T) {
	t.Parallel()
	kit := tool.Toolkit{Name: "files", Tools: []tool.Tool{echoRaw("read", `{}`), echoRaw("write", `{}`), echoRaw("delete", `{}`)}}
	tests := []struct {
		name             string
		include, exclude []string
		want             string
		wantErr          string
	}{
		{"all by default", nil, nil, "read write delete", ""},
		{"include keeps only named", []string{"delete", "read"}, nil, "read delete", ""},
		{"exclude drops named", nil, []string{"delete"}, "read write", ""},
		{"exclude applies after include", []string{"read", "write"}, []string{"write"}, "read", ""},
		{"unknown include", []string{"reed"}, nil, "", `toolkit files has no tool "reed"`},
		{"unknown exclude", nil, []string{"rm"}, "", `no tool "rm"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := kit
			k.Include, k.Exclude = tt.include, tt.exclude
			got, err := k.Selected()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := make([]string, len(got))
			for i, tl := range got {
				names[i] = tl.Definition().Name
			}
			if s := strings.Join(names, " "); s != tt.want {
				t.Errorf("selected %s, want %s", s, tt.want)
			}
		})
	}
}

func TestToolkit_RejectsNilTool(t *testing.T) {
	t.Parallel()
	_, err := tool.Toolkit{Name: "k", Tools: []tool.Tool{nil}}.Selected()
	if err == nil || !strings.Contains(err.Error(), "nil tool") {
		t.Fatalf("err = %v", err)
	}
}
