package testadapter

import (
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// PackagePath is the main package Build compiles, relative to the module
// root.
const PackagePath = "./internal/testadapter/cmd/testadapter"

// Build compiles the testadapter binary once per test binary, with the
// Makefile's flags (testsupport.Binary), and returns its path. It skips
// the test when no go command is installed, except in CI, where it fails.
// Tests that must change or pin the binary copy it first: test processes
// running at once share the file.
func Build(t testing.TB) string {
	t.Helper()
	return testsupport.Binary(t, PackagePath)
}
