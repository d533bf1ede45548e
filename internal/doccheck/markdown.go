package doccheck

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Page is what the checks read of one markdown page.
type Page struct {
	Path     string    // relative to the module root, slash-separated
	Anchors  []string  // the anchors of its headings, as GitHub makes them
	Links    []Link    // inline links outside code
	Commands []Command // quoted commands: lines of shell fences, inline code
}

// Link is one inline link's target, as written.
type Link struct {
	Line   int
	Target string
}

// Command is one quoted command: a shell fence's line (continuations
// joined) or an inline code span.
type Command struct {
	Line int
	Text string
}

var (
	fenceRE   = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([A-Za-z]*)")
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	codeRE    = regexp.MustCompile("`+([^`]+)`+")
	linkRE    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
)

// shellFences are the info strings of fences whose lines are commands.
var shellFences = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// ParsePage reads a page's headings, links and commands.
func ParsePage(path, src string) *Page {
	p := &Page{Path: path}
	slugs := newSlugger()
	var fence, info string
	var cont *Command
	for i, line := range strings.Split(src, "\n") {
		n := i + 1
		if m := fenceRE.FindStringSubmatch(line); m != nil && (fence == "" || strings.HasPrefix(m[1], fence)) {
			if fence == "" {
				fence, info = m[1][:3], strings.ToLower(m[2])
			} else {
				fence, info, cont = "", "", nil
			}
			continue
		}
		if fence != "" {
			if shellFences[info] {
				cont = p.shellLine(n, line, cont)
			}
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			p.Anchors = append(p.Anchors, slugs.anchor(m[1]))
		}
		p.proseLine(n, line)
	}
	return p
}

// shellLine adds a fence line as a command, or to the one a trailing
// backslash continues, and returns the command the next line continues.
func (p *Page) shellLine(n int, line string, cont *Command) *Command {
	text := strings.TrimSpace(line)
	text = strings.TrimPrefix(text, "$ ")
	more := strings.HasSuffix(text, "\\")
	text = strings.TrimSuffix(text, "\\")
	if cont != nil {
		cont.Text += " " + text
	} else {
		p.Commands = append(p.Commands, Command{Line: n, Text: text})
		cont = &p.Commands[len(p.Commands)-1]
	}
	if !more {
		return nil
	}
	return cont
}

// proseLine takes a prose line's code spans as commands and its links,
// outside code, as links.
func (p *Page) proseLine(n int, line string) {
	for _, m := range codeRE.FindAllStringSubmatch(line, -1) {
		p.Commands = append(p.Commands, Command{Line: n, Text: strings.TrimSpace(m[1])})
	}
	for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, "``"), -1) {
		p.Links = append(p.Links, Link{Line: n, Target: m[1]})
	}
}

// slugger makes GitHub's heading anchors: the heading's text lowercased,
// every character that is not a letter, digit, space, hyphen or
// underscore dropped, spaces turned into hyphens; a repeated anchor gets
// -1, -2, ... in page order.
type slugger struct{ seen map[string]int }

func newSlugger() *slugger { return &slugger{seen: map[string]int{}} }

var inlineLinkRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

func (s *slugger) anchor(heading string) string {
	text := inlineLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	slug := b.String()
	n := s.seen[slug]
	s.seen[slug] = n + 1
	if n > 0 {
		return slug + "-" + strconv.Itoa(n)
	}
	return slug
}
