package archdoc

import (
	"regexp"
	"slices"
	"strings"
)

// Page is a markdown page cut into what the checks read.
type Page struct {
	Units []Unit // prose: a list item or paragraph, read with a scope
	Rows  []Row  // the rows of the package tables
	Edges []Edge // the arrows of the diagrams
	Bad   []Span // diagram segments that are not package paths
	// Parents gives, for an ordered list nested in an item of another,
	// that item: the function it names runs the nested steps.
	Parents map[int]Step
}

// Span is one backticked span, or one diagram segment, and its line.
type Span struct {
	Line int
	Text string
}

// Unit is a list item (with its continuation lines) or a paragraph: the
// scope a file or package it names holds for the names after it.
type Unit struct {
	Line  int
	Spans []Span
	Pkg   string // the package a table row's cells start in
	Steps []Step // the ordered-list items the unit is in, outermost first
}

// Row is one row of a table whose first header cell is "package": the
// package, and the project packages its last cell says it imports.
type Row struct {
	Line    int
	Package string
	Imports []string
}

// Edge is one arrow of a diagram: From imports To.
type Edge struct {
	Line     int
	From, To string
}

var (
	spanRE     = regexp.MustCompile("`([^`]+)`")
	itemRE     = regexp.MustCompile(`^\s*(\d+\.|[-*])\s`)
	stepRE     = regexp.MustCompile(`^(\d+)\.\s`)
	separator  = regexp.MustCompile(`^\|[\s\-:|]+\|?\s*$`)
	arrowRE    = regexp.MustCompile(`[─┬├└│]*─>`)
	commentRE  = regexp.MustCompile(`\([^)]*\)`)
	pkgPathRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9_./-]*$`)
	braceGroup = regexp.MustCompile(`^([^{}]*)\{([^{}]*)\}([^{}]*)$`)
)

// ParsePage cuts a page into units, table rows and diagram edges.
func ParsePage(src string) *Page {
	p := &Page{Parents: map[int]Step{}}
	var (
		cur      *Unit
		inFence  bool
		pkgTable bool
		diagram  diagramState
		steps    = stepState{parents: p.Parents}
	)
	flush := func() {
		if cur != nil && len(cur.Spans) > 0 {
			p.Units = append(p.Units, *cur)
		}
		cur = nil
	}
	lines := strings.Split(src, "\n")
	for i, line := range lines {
		n := i + 1
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "```"):
			flush()
			inFence = !inFence
			diagram = diagramState{}
		case inFence:
			diagram.line(p, n, line)
		case strings.HasPrefix(line, "|"):
			flush()
			if i == 0 || !strings.HasPrefix(lines[i-1], "|") {
				pkgTable = strings.TrimSpace(cells(line)[0]) == "package"
				continue
			}
			p.tableRow(n, line, pkgTable)
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
			flush()
			if strings.HasPrefix(line, "#") {
				steps.reset()
			}
		default:
			if cur == nil || itemRE.MatchString(line) {
				flush()
				cur = &Unit{Line: n, Steps: steps.item(line)}
			}
			cur.Spans = append(cur.Spans, spans(n, line)...)
		}
	}
	flush()
	return p
}

func spans(n int, line string) []Span {
	var out []Span
	for _, m := range spanRE.FindAllStringSubmatch(line, -1) {
		out = append(out, Span{Line: n, Text: m[1]})
	}
	return out
}

// cells splits a table line on its pipes, without the outer ones.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	return strings.Split(line, "|")
}

// tableRow reads a row: in a package table the first cell names the
// package, the last its imports, and the cells between are a unit whose
// scope starts in the package; in any other table the row is a unit.
func (p *Page) tableRow(n int, line string, pkgTable bool) {
	if separator.MatchString(line) {
		return
	}
	cs := cells(line)
	if !pkgTable || len(cs) < 2 {
		p.Units = append(p.Units, Unit{Line: n, Spans: spans(n, line)})
		return
	}
	first := spans(n, cs[0])
	if len(first) != 1 {
		p.Bad = append(p.Bad, Span{Line: n, Text: strings.TrimSpace(cs[0])})
		return
	}
	row := Row{Line: n, Package: first[0].Text}
	for _, s := range spans(n, cs[len(cs)-1]) {
		row.Imports = append(row.Imports, expand(s.Text)...)
	}
	p.Rows = append(p.Rows, row)
	p.Units = append(p.Units, Unit{Line: n, Pkg: row.Package, Spans: spans(n, strings.Join(cs[1:len(cs)-1], "|"))})
}

// expand turns "a/{b, c/d}, e" into a/b, a/c/d, e.
func expand(text string) []string {
	var out []string
	for _, item := range splitTop(text) {
		item = strings.TrimSpace(item)
		m := braceGroup.FindStringSubmatch(item)
		if m == nil {
			if item != "" {
				out = append(out, item)
			}
			continue
		}
		for _, alt := range strings.Split(m[2], ",") {
			out = append(out, m[1]+strings.TrimSpace(alt)+m[3])
		}
	}
	return out
}

// splitTop splits on the commas outside braces.
func splitTop(text string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range text {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, text[start:i])
				start = i + 1
			}
		}
	}
	return append(out, text[start:])
}

// stepState numbers the page's ordered lists: a "1. " begins one at its
// indentation, and it runs through the numbered items at that
// indentation (their indented continuations, blank lines and nested
// lists between) until a heading, an unindented line that is not one
// of its items, or a numbered item less indented.
type stepState struct {
	parents map[int]Step
	lists   int
	open    []Step // the lists open, outermost first, each at its current item
	inds    []int  // the indentation of each open list's items
}

// Step is one item of an ordered list: the list (numbered from 1 in page
// order) and the item's place in it (from 1).
type Step struct {
	List, Item int
}

// item returns the steps a unit starting with line belongs to, outermost
// first; none when it is in no ordered list.
func (s *stepState) item(line string) []Step {
	ind := len(line) - len(strings.TrimLeft(line, " "))
	m := stepRE.FindStringSubmatch(strings.TrimLeft(line, " "))
	switch {
	case m == nil && ind == 0:
		s.reset()
	case m != nil:
		for len(s.inds) > 0 && s.inds[len(s.inds)-1] > ind {
			s.open, s.inds = s.open[:len(s.open)-1], s.inds[:len(s.inds)-1]
		}
		top := len(s.inds) - 1
		switch {
		case m[1] == "1" || top < 0 || s.inds[top] != ind:
			if top >= 0 && s.inds[top] == ind {
				s.open, s.inds = s.open[:top], s.inds[:top]
			}
			s.lists++
			if len(s.open) > 0 {
				s.parents[s.lists] = s.open[len(s.open)-1]
			}
			s.open, s.inds = append(s.open, Step{List: s.lists, Item: 1}), append(s.inds, ind)
		default:
			s.open[top].Item++
		}
	}
	return slices.Clone(s.open)
}

func (s *stepState) reset() { s.open, s.inds = nil, nil }

// diagramState remembers the source of a branch (the segment before a
// "─┬─>") for the "├─>" and "└─>" lines under it.
type diagramState struct {
	branch []string
}

// line reads one diagram line: segments between arrows are packages (a
// comma list, braces expanded); text in parentheses is a comment; a line
// that starts with an arrow continues the last branch.
func (d *diagramState) line(p *Page, n int, line string) {
	line = commentRE.ReplaceAllString(line, "")
	arrows := arrowRE.FindAllStringIndex(line, -1)
	if len(arrows) == 0 {
		return
	}
	var prev []string
	start := 0
	for i := 0; i <= len(arrows); i++ {
		end := len(line)
		if i < len(arrows) {
			end = arrows[i][0]
		}
		seg := p.segment(n, line[start:end])
		if i == 0 && len(seg) == 0 {
			seg = d.branch
		}
		for _, from := range prev {
			for _, to := range seg {
				p.Edges = append(p.Edges, Edge{Line: n, From: from, To: to})
			}
		}
		if i < len(arrows) && strings.Contains(line[arrows[i][0]:arrows[i][1]], "┬") {
			d.branch = seg
		}
		prev = seg
		if i < len(arrows) {
			start = arrows[i][1]
		}
	}
}

// segment returns the packages one diagram segment names.
func (p *Page) segment(n int, text string) []string {
	text = strings.Trim(text, " │")
	var out []string
	for _, item := range expand(text) {
		if !pkgPathRE.MatchString(item) {
			p.Bad = append(p.Bad, Span{Line: n, Text: item})
			continue
		}
		out = append(out, item)
	}
	return out
}
