package testsupport

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// RequireRoot skips t unless it runs as root with every named tool (ip,
// mount, ...) on PATH; in CI (IsCI) a missing prerequisite fails it.
func RequireRoot(t testing.TB, tools ...string) {
	t.Helper()
	if reason := missing(os.Geteuid(), exec.LookPath, tools); reason != "" {
		SkipOrFail(t, "%s", reason)
	}
}

// missing says what is missing, "" when nothing is.
func missing(euid int, lookPath func(string) (string, error), tools []string) string {
	want := "root"
	if len(tools) > 0 {
		want += " and " + strings.Join(tools, ", ")
	}
	if euid != 0 {
		return "needs " + want + ": runs as uid " + strconv.Itoa(euid)
	}
	for _, tool := range tools {
		if _, err := lookPath(tool); err != nil {
			return "needs " + want + ": " + tool + " is not on PATH"
		}
	}
	return ""
}
