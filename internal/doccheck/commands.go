package doccheck

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

var (
	// separatorRE splits a command line into the commands it runs.
	separatorRE = regexp.MustCompile(`\s*(?:&&|\|\||;|\||\$\(|\))\s*`)
	// assignRE is a leading VAR=value of a command.
	assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	// ruleRE is a Makefile rule line: its targets before one colon.
	ruleRE = regexp.MustCompile(`^([A-Za-z0-9_.-][A-Za-z0-9_. -]*):(?:[^=]|$)`)
)

// MakeTargets reads a Makefile's targets: every name before the colon of
// a rule line and every .PHONY name.
func MakeTargets(r io.Reader) (map[string]bool, error) {
	out := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, ".PHONY:"); ok {
			for _, t := range strings.Fields(rest) {
				out[t] = true
			}
			continue
		}
		if m := ruleRE.FindStringSubmatch(line); m != nil {
			for _, t := range strings.Fields(m[1]) {
				out[t] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read Makefile: %w", err)
	}
	return out, nil
}

// Call is one command a quote runs, as words: the program first, without
// the VAR=value assignments and sudo before it.
type Call struct {
	Page  string
	Line  int
	Quote string // the whole quote, for the message
	Words []string
}

// Calls cuts every quoted command of the pages into the calls it makes.
func (s *Site) Calls() []Call {
	var out []Call
	for _, p := range s.sorted() {
		for _, c := range p.Commands {
			for _, words := range splitCommand(c.Text) {
				out = append(out, Call{Page: p.Path, Line: c.Line, Quote: c.Text, Words: words})
			}
		}
	}
	return out
}

// splitCommand cuts a command line into its commands' words; a comment
// ends the line, and quotes are dropped from words.
func splitCommand(text string) [][]string {
	if i := strings.Index(text, " #"); i >= 0 {
		text = text[:i]
	}
	var out [][]string
	for _, part := range separatorRE.Split(text, -1) {
		var words []string
		for _, w := range strings.Fields(part) {
			words = append(words, strings.Trim(w, `"'`))
		}
		for len(words) > 0 && (assignRE.MatchString(words[0]) || words[0] == "sudo") {
			words = words[1:]
		}
		if len(words) > 0 {
			out = append(out, words)
		}
	}
	return out
}

// CheckMake reports every quoted `make` call whose target the Makefile
// lacks; a call without a target runs the default goal and is fine.
func CheckMake(calls []Call, targets map[string]bool) []Problem {
	var out []Problem
	for _, c := range calls {
		if c.Words[0] != "make" {
			continue
		}
		for _, w := range c.Words[1:] {
			if strings.HasPrefix(w, "-") || assignRE.MatchString(w) {
				continue
			}
			if !targets[w] {
				out = append(out, Problem{Page: c.Page, Line: c.Line,
					Msg: fmt.Sprintf("`%s`: the Makefile has no target %s (it has %s)", c.Quote, w, strings.Join(sortedKeys(targets), ", "))})
			}
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ToolCall is a quoted call of one of the project's binaries: the
// arguments after its name, up to the end of the call.
type ToolCall struct {
	Call
	Tool string
	Args []string
}

// ToolCalls finds the calls of the named binaries: a word that is the
// name, or a path ending in it, that starts the call or follows "--"
// (`kubectl exec POD -c ipamd -- ipamctl pods` calls ipamctl, not ipamd:
// "-c ipamd" names a container).
func ToolCalls(calls []Call, tools []string) []ToolCall {
	var out []ToolCall
	for _, c := range calls {
		for i, w := range c.Words {
			tool := w[strings.LastIndex(w, "/")+1:]
			if !slices.Contains(tools, tool) || i > 0 && c.Words[i-1] != "--" {
				continue
			}
			out = append(out, ToolCall{Call: c, Tool: tool, Args: c.Words[i+1:]})
			break
		}
	}
	return out
}

// placeholderRE is an argument the page leaves to the reader: SANDBOX-ID,
// <name>, NODE, ...
var placeholderRE = regexp.MustCompile(`[<>A-Z.]|^\.\.\.$`)

// Subcommand returns the call's first argument when it names a
// subcommand (a word, not a flag, a value or a placeholder).
func (tc ToolCall) Subcommand() string {
	if len(tc.Args) == 0 {
		return ""
	}
	a := tc.Args[0]
	if strings.HasPrefix(a, "-") || placeholderRE.MatchString(a) || !regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(a) {
		return ""
	}
	return a
}

// Flags returns the flags the call gives, by name without dashes or
// value.
func (tc ToolCall) Flags() []string {
	var out []string
	for _, a := range tc.Args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// HelpNames reports whether a help text names the flag: -name or --name,
// as Go's flag package and cobra print them.
func HelpNames(help, flag string) bool {
	re := regexp.MustCompile(`(^|[\s\[,(|])--?` + regexp.QuoteMeta(flag) + `([\s,=\])|]|$)`)
	return re.MatchString(help)
}
