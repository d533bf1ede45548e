package doccheck

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Problem is one thing a page says that the tree does not hold.
type Problem struct {
	Page string
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.Page, p.Line, p.Msg) }

// Site is the pages checked together, by path, so a link's fragment is
// looked up in the page it reaches, and the module root the paths are
// relative to.
type Site struct {
	Root  string
	Pages map[string]*Page
}

// LoadSite parses the pages (module-relative paths) under root.
func LoadSite(root string, paths []string) (*Site, error) {
	s := &Site{Root: root, Pages: map[string]*Page{}}
	for _, p := range paths {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("read page %s: %w", p, err)
		}
		s.Pages[p] = ParsePage(p, string(src))
	}
	return s, nil
}

// PagePaths lists the pages the project keeps true: README.md,
// BENCHMARKS.md and every docs/*.md.
func PagePaths(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, fmt.Errorf("list docs: %w", err)
	}
	out := []string{"README.md", "BENCHMARKS.md"}
	for _, d := range docs {
		out = append(out, "docs/"+filepath.Base(d))
	}
	return out, nil
}

// CheckLinks reports every relative link that reaches no file or
// directory, and every fragment that names no heading of the markdown
// page it reaches (the page itself, for "#fragment").
func (s *Site) CheckLinks() []Problem {
	var out []Problem
	for _, p := range s.sorted() {
		for _, l := range p.Links {
			if msg := s.checkLink(p, l.Target); msg != "" {
				out = append(out, Problem{Page: p.Path, Line: l.Line, Msg: msg})
			}
		}
	}
	return out
}

func (s *Site) sorted() []*Page {
	paths := make([]string, 0, len(s.Pages))
	for p := range s.Pages {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	out := make([]*Page, len(paths))
	for i, p := range paths {
		out[i] = s.Pages[p]
	}
	return out
}

// checkLink returns what is wrong with one link, or "".
func (s *Site) checkLink(from *Page, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Sprintf("link %s does not parse: %v", target, err)
	}
	if u.Scheme != "" || u.Host != "" || strings.HasPrefix(target, "/") {
		return "" // absolute: not the tree's to keep
	}
	rel := from.Path
	if u.Path != "" {
		rel = path.Join(path.Dir(from.Path), u.Path)
		if strings.HasPrefix(rel, "../") || rel == ".." {
			return fmt.Sprintf("link %s leaves the repository", target)
		}
		if _, err := os.Stat(filepath.Join(s.Root, filepath.FromSlash(rel))); err != nil {
			return fmt.Sprintf("link %s: %s does not exist", target, rel)
		}
	}
	if u.Fragment == "" {
		return ""
	}
	return s.checkFragment(target, rel, u.Fragment)
}

// checkFragment looks a fragment up among the anchors of the markdown
// page rel; a page outside the site is parsed for it.
func (s *Site) checkFragment(target, rel, frag string) string {
	if !strings.HasSuffix(rel, ".md") {
		return fmt.Sprintf("link %s: a fragment on %s, which is not a markdown page", target, rel)
	}
	p := s.Pages[rel]
	if p == nil {
		src, err := os.ReadFile(filepath.Join(s.Root, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Sprintf("link %s: %v", target, err)
		}
		p = ParsePage(rel, string(src))
	}
	if slices.Contains(p.Anchors, frag) {
		return ""
	}
	return fmt.Sprintf("link %s: %s has no heading with the anchor #%s%s", target, rel, frag, nearest(frag, p.Anchors))
}

// nearest names the anchors that share the fragment's first word, for the
// message.
func nearest(frag string, anchors []string) string {
	first, _, _ := strings.Cut(frag, "-")
	var near []string
	for _, a := range anchors {
		if strings.HasPrefix(a, first) {
			near = append(near, "#"+a)
		}
	}
	if len(near) == 0 {
		return ""
	}
	return " (its anchors that start alike: " + strings.Join(near, ", ") + ")"
}
