package doccheck

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Tools asks the project's binaries what they take. Bins maps a tool's
// name to its built binary.
type Tools struct {
	Bins  map[string]string
	cache map[string]answer
}

type answer struct {
	out string
	err error
}

// help runs `bin args... --help` once per argument list and returns its
// output, and an error when it exits non-zero.
func (t *Tools) help(ctx context.Context, tool string, args ...string) (string, error) {
	key := tool + " " + strings.Join(args, " ")
	if a, ok := t.cache[key]; ok {
		return a.out, a.err
	}
	if t.cache == nil {
		t.cache = map[string]answer{}
	}
	cmd := exec.CommandContext(ctx, t.Bins[tool], append(args, "--help")...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		err = fmt.Errorf("run %s: %w", key, err)
	}
	t.cache[key] = answer{out: string(out), err: err}
	return string(out), err
}

// Check reports every quoted call whose subcommand or flag the binary
// does not take. ipamd's subcommands and flags are looked up in `ipamd
// --help`; ipamctl's and sandboxipam-install's subcommands must answer
// `<bin> <sub> --help` with exit 0, and the flags after them be named in
// that help.
func (t *Tools) Check(ctx context.Context, calls []ToolCall) []Problem {
	var out []Problem
	for _, c := range calls {
		for _, msg := range t.checkCall(ctx, c) {
			out = append(out, Problem{Page: c.Page, Line: c.Line, Msg: fmt.Sprintf("`%s`: %s", c.Quote, msg)})
		}
	}
	return out
}

func (t *Tools) checkCall(ctx context.Context, c ToolCall) []string {
	sub := c.Subcommand()
	var helpArgs []string
	if sub != "" && c.Tool != "ipamd" {
		helpArgs = []string{sub}
	}
	help, err := t.help(ctx, c.Tool, helpArgs...)
	if err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(help), "\n")
		if sub != "" {
			return []string{fmt.Sprintf("%s has no subcommand %s (%s %s --help: %v: %s)", c.Tool, sub, c.Tool, sub, err, first)}
		}
		return []string{fmt.Sprintf("%s --help: %v: %s", c.Tool, err, first)}
	}
	var msgs []string
	if sub != "" && c.Tool == "ipamd" && !strings.Contains(help, "ipamd "+sub) {
		msgs = append(msgs, fmt.Sprintf("ipamd has no subcommand %s (ipamd --help does not name it)", sub))
	}
	for _, f := range c.Flags() {
		if !HelpNames(help, f) {
			where := c.Tool
			if len(helpArgs) > 0 {
				where += " " + sub
			}
			msgs = append(msgs, fmt.Sprintf("%s takes no flag --%s (%s --help does not name it)", where, f, where))
		}
	}
	return msgs
}
