package reader

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxHTMLNesting bounds the quotes and lists nested in one another that
// keep their Markdown markers. Every line inside one repeats the markers of
// all of them, and the converter rewrites the whole inside at each level:
// nested hundreds deep, 166 KB of HTML took minutes and rendered to 40 MB.
// Deeper ones become plain blocks; their text stays.
const maxHTMLNesting = 16

// readHTML converts HTML to Markdown, tables to Markdown tables (without
// the table plugin a table's cells ran together: "RegionRevenueNorth12").
func readHTML(data []byte) (string, error) {
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("%w: html: %v", ErrMalformed, err)
	}
	flattenNesting(doc, 0)
	prepareTables(doc, false)
	// cells unpadded and their line breaks kept (padded to the column's
	// widest, one long cell made every row as long)
	conv := converter.NewConverter(converter.WithPlugins(base.NewBasePlugin(), commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal), table.WithNewlineBehavior(table.NewlineBehaviorPreserve))))
	out, err := conv.ConvertNode(doc)
	if err != nil {
		return "", fmt.Errorf("%w: html: %v", ErrMalformed, err)
	}
	return string(out), nil
}

// flattenNesting turns quotes and lists deeper than maxHTMLNesting into
// divs. The parser bounds the tree's depth (512), so the recursion is too.
func flattenNesting(n *html.Node, depth int) {
	if n.Type == html.ElementNode {
		switch n.DataAtom {
		case atom.Blockquote, atom.Ul, atom.Ol:
			if depth == maxHTMLNesting {
				n.DataAtom, n.Data = atom.Div, "div"
			} else {
				depth++
			}
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		flattenNesting(c, depth)
	}
}

// prepareTables leaves the table plugin only tables it renders in about
// their own size. Spans go (the plugin fills the cells a span covers: one
// rowspan=65534 colspan=1000 cell rendered to 196 MB). A ragged table (the
// plugin pads every row to the widest: one wide row over thousands of short
// ones, 145 KB, rendered to 75 MB), a layout table (role=presentation) and
// a table in another's cell become blocks, a cell a block: their text
// stays, apart.
func prepareTables(n *html.Node, inCell bool) {
	if n.Type == html.ElementNode && n.DataAtom == atom.Table {
		rows, cols, cells := 0, 0, 0
		ownRows(n, func(tr *html.Node) {
			k := 0
			for c := tr.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && (c.DataAtom == atom.Td || c.DataAtom == atom.Th) {
					k++
					c.Attr = slices.DeleteFunc(c.Attr, func(a html.Attribute) bool { return a.Key == "rowspan" || a.Key == "colspan" })
				}
			}
			rows, cols, cells = rows+1, max(cols, k), cells+k
		})
		role := ""
		for _, a := range n.Attr {
			if a.Key == "role" {
				role = strings.ToLower(strings.TrimSpace(a.Val))
			}
		}
		if inCell || role == "presentation" || role == "none" || rows*cols > 2*cells+16 {
			unTable(n)
		}
	}
	if n.Type == html.ElementNode && (n.DataAtom == atom.Td || n.DataAtom == atom.Th) {
		inCell = true
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		prepareTables(c, inCell)
	}
}

// ownRows calls f for each row of table t, not of tables inside it.
func ownRows(t *html.Node, f func(tr *html.Node)) {
	for c := t.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		switch c.DataAtom {
		case atom.Tr:
			f(c)
		case atom.Thead, atom.Tbody, atom.Tfoot:
			ownRows(c, f)
		}
	}
}

// unTable turns table t and its own sections, rows and cells into divs.
func unTable(t *html.Node) {
	div := func(n *html.Node) { n.DataAtom, n.Data = atom.Div, "div" }
	ownRows(t, func(tr *html.Node) {
		for c := tr.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.DataAtom == atom.Td || c.DataAtom == atom.Th) {
				div(c)
			}
		}
		div(tr)
	})
	for c := t.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && (c.DataAtom == atom.Thead || c.DataAtom == atom.Tbody || c.DataAtom == atom.Tfoot || c.DataAtom == atom.Caption) {
			div(c)
		}
	}
	div(t)
}
