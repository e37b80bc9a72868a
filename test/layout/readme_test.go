package layout

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/switchboard-dev/switchboard/internal/cli"
)

// layoutRow is one row of README's layout table: the code spans of its first column (the
// paths) and of its second (what they are; the binary's row names its subcommands there).
type layoutRow struct {
	paths, names []string
}

// readmeLayout reads the table under README's "## Layout" heading.
func readmeLayout(t *testing.T, root string) []layoutRow {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := goldmark.New(goldmark.WithExtensions(extension.Table)).Parser().Parse(text.NewReader(src))
	var underLayout bool
	var rows []layoutRow
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok && h.Level == 2 {
			underLayout = string(h.Lines().Value(src)) == "Layout"
			continue
		}
		table, ok := n.(*east.Table)
		if !underLayout || !ok {
			continue
		}
		for r := table.FirstChild(); r != nil; r = r.NextSibling() {
			if _, ok := r.(*east.TableRow); !ok {
				continue // the header
			}
			path := r.FirstChild()
			if path == nil || path.NextSibling() == nil {
				t.Fatalf("README's layout table has a row with fewer than two columns")
			}
			rows = append(rows, layoutRow{paths: codeSpans(path, src), names: codeSpans(path.NextSibling(), src)})
		}
		break
	}
	if len(rows) == 0 {
		t.Fatal(`README.md has no table under "## Layout"`)
	}
	return rows
}

func codeSpans(cell ast.Node, src []byte) []string {
	var spans []string
	_ = ast.Walk(cell, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if c, ok := n.(*ast.CodeSpan); ok && entering {
			var b strings.Builder
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				if seg, ok := t.(*ast.Text); ok {
					b.Write(seg.Segment.Value(src))
				}
			}
			spans = append(spans, b.String())
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return spans
}

// moduleRoot is the directory of this module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	return goList(t, module)[0].Dir
}

func TestReadmeLayoutListsEveryPackage(t *testing.T) {
	root := moduleRoot(t)
	rows := readmeLayout(t, root)
	listed := map[string]bool{}
	for _, r := range rows {
		for _, p := range r.paths {
			listed[strings.TrimSuffix(p, "/")] = true
		}
	}
	for _, p := range goList(t, module+"/...") {
		dir, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if dir == "." {
			dir = "main.go"
		}
		if !listed[filepath.ToSlash(dir)] {
			t.Errorf("README's layout table (## Layout) does not list %s/ (package %s): add a row or name it in one", dir, p.ImportPath)
		}
	}
	for p := range listed {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("README's layout table lists `%s`, which does not exist", p)
		}
	}
}

func TestReadmeLayoutListsEverySubcommand(t *testing.T) {
	rows := readmeLayout(t, moduleRoot(t))
	i := slices.IndexFunc(rows, func(r layoutRow) bool { return slices.Contains(r.paths, "main.go") })
	if i < 0 {
		t.Fatal("README's layout table has no row for `main.go`, the binary")
	}
	named := rows[i].names
	var paths []string
	var walk func(c *cobra.Command, prefix string)
	walk = func(c *cobra.Command, prefix string) {
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			path := strings.TrimSpace(prefix + " " + sub.Name())
			paths = append(paths, path)
			walk(sub, path)
		}
	}
	walk(cli.NewRootCommand(), "")
	if !slices.Contains(paths, "serve") {
		t.Fatalf("the command tree has no serve, so it is not the binary's: %v", paths)
	}
	for _, p := range paths {
		if !slices.Contains(named, p) {
			t.Errorf("README's layout table does not name the subcommand `%s` in the `main.go` row (write it as `%s`)", p, p)
		}
	}
	for _, n := range named {
		if !slices.Contains(paths, n) && n != "switchboard" {
			t.Errorf("README's `main.go` row names `%s`, which is not a subcommand of the binary", n)
		}
	}
}
