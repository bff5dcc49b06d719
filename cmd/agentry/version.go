package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

// buildVersion is what a binary knows about its own build: the version and
// the VCS stamp `go build` and `go install` record (go run and
// -buildvcs=false record none).
type buildVersion struct {
	// Version is the -ldflags version, else the module version (a tag or a
	// pseudo-version), else "devel".
	Version  string
	Revision string // vcs.revision
	Time     string // vcs.time
	Modified bool   // vcs.modified: built from a tree with uncommitted changes
}

// readBuildVersion reads bi (nil when the binary carries no build info).
func readBuildVersion(bi *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: version}
	if bi == nil {
		if v.Version == "" {
			v.Version = "devel"
		}
		return v
	}
	if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	if v.Version == "" {
		v.Version = "devel"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the line `agentry version` and `agentry --version` print.
func (v buildVersion) String() string {
	var details []string
	switch {
	case v.Revision != "":
		rev := "revision " + v.Revision
		if v.Time != "" {
			rev += ", " + v.Time
		}
		if v.Modified {
			rev += ", modified"
		}
		details = append(details, rev)
	case v.Version == "devel":
		details = append(details, "no VCS revision: built by go run or with -buildvcs=false")
	}
	details = append(details, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("agentry %s (%s)", v.Version, strings.Join(details, "; "))
}

func currentBuild() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return readBuildVersion(bi)
}

// agentryVersion is the build's version alone (GET /info reports it).
func agentryVersion() string { return currentBuild().Version }

func versionString() string { return currentBuild().String() }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the VCS revision it was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
}
