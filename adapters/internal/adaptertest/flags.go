package adaptertest

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// ParseFlagsFile parses the package's testdata/flags.txt (whitespace-
// separated flags) into the flags register adds, the way an adapter binary
// parses its command line.
func ParseFlagsFile(t *testing.T, name string, register func(*flag.FlagSet)) {
	t.Helper()
	raw, err := os.ReadFile("testdata/flags.txt")
	if err != nil {
		t.Fatal(err)
	}
	flags := flag.NewFlagSet(name, flag.ContinueOnError)
	register(flags)
	if err := flags.Parse(strings.Fields(string(raw))); err != nil {
		t.Fatal(err)
	}
}
