package reader

import (
	"bytes"
	"fmt"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxHTMLNesting bounds the quotes and lists nested in one another that
// keep their Markdown markers. Every line inside one repeats the markers of
// all of them, and the converter rewrites the whole inside at each level:
// nested hundreds deep, 166 KB of HTML took minutes and rendered to 40 MB.
// Deeper ones become plain blocks; their text stays.
const maxHTMLNesting = 16

// readHTML converts HTML to Markdown.
func readHTML(data []byte) (string, error) {
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("%w: html: %v", ErrMalformed, err)
	}
	flattenNesting(doc, 0)
	out, err := htmltomarkdown.ConvertNode(doc)
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
