package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion_ReportsModuleVersionAndVCSRevision(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "5716940121ffb3ec900a767fd354458b575748f6"},
		{Key: "vcs.time", Value: "2026-12-01T00:36:59Z"},
	}
	tests := []struct {
		name    string
		bi      *debug.BuildInfo
		want    []string
		notWant []string
	}{
		{
			name:    "go build in a clean clone",
			bi:      &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201003659-5716940121ff"}, Settings: append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "false"})},
			want:    []string{"agentry v0.0.0-20261201003659-5716940121ff (", "revision 5716940121ffb3ec900a767fd354458b575748f6, 2026-12-01T00:36:59Z;"},
			notWant: []string{"modified", "devel"},
		},
		{
			name: "go build with uncommitted changes",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			want: []string{"agentry devel (revision 5716940121ffb3ec900a767fd354458b575748f6, 2026-12-01T00:36:59Z, modified;"},
		},
		{
			name:    "go install module@version",
			bi:      &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}},
			want:    []string{"agentry v1.2.3 (go"},
			notWant: []string{"revision", "devel"},
		},
		{
			name: "go run",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			want: []string{"agentry devel (no VCS revision: built by go run or with -buildvcs=false; go"},
		},
		{
			name: "no build info",
			want: []string{"agentry devel ("},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := readBuildVersion(tc.bi).String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("version line %q does not contain %q", got, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("version line %q contains %q", got, w)
				}
			}
		})
	}
}

func TestVersion_FlagAndCommandPrintTheSameLine(t *testing.T) {
	t.Parallel()
	code, cmdOut, errOut := cli(t, "version")
	if code != 0 {
		t.Fatalf("version: exit %d: %s", code, errOut)
	}
	code, flagOut, errOut := cli(t, "--version")
	if code != 0 {
		t.Fatalf("--version: exit %d: %s", code, errOut)
	}
	if cmdOut != flagOut || !strings.HasPrefix(flagOut, "agentry ") {
		t.Errorf("agentry version = %q, agentry --version = %q; want the same line", cmdOut, flagOut)
	}
}
