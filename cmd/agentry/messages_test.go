package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the repository root, from this package's directory.
var repoRoot = filepath.Join("..", "..")

// fileMention is a file name a message or help text may point a user at.
var fileMention = regexp.MustCompile(`[A-Za-z0-9_][A-Za-z0-9_./-]*\.(?:md|ya?ml)\b`)

// TestMessages_NameOnlyFilesInTheRepository: every .md or .yaml file that a
// string in the program (errors, help, logs) or the demo agent's reply names
// exists in the repository, at that path from its root.
func TestMessages_NameOnlyFilesInTheRepository(t *testing.T) {
	t.Parallel()
	type mention struct{ where, file string }
	var mentions []mention
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != repoRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, _ := strconv.Unquote(lit.Value)
				for _, m := range fileMention.FindAllString(s, -1) {
					mentions = append(mentions, mention{path, m})
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	demo, err := os.ReadFile("demo.script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(demo), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, m := range fileMention.FindAllString(line, -1) {
			mentions = append(mentions, mention{"the demo agent's reply", m})
		}
	}
	if len(mentions) == 0 {
		t.Fatal("found no file mentions at all; the scan is broken")
	}
	for _, m := range mentions {
		if _, err := os.Stat(filepath.Join(repoRoot, strings.TrimPrefix(m.file, "./"))); err != nil {
			t.Errorf("%s names %s, which is not in the repository", m.where, m.file)
		}
	}
}
