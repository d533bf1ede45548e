// Package testsupport holds what the tests of this module need in many
// places, written once:
//
//   - ModuleRoot / Root: the directory of this module's go.mod, found by
//     walking up from the test's working directory (its package directory).
//   - IsCI and SkipOrFail: a test that cannot run here (no root, no runtime,
//     no tool) skips with its reason, except in CI, where a skip would hide
//     a gap and the test fails instead. Any CI value other than "", "false"
//     and "0" counts as CI, as CI systems set CI=true, CI=1 or CI=yes.
//   - Build and Binary: compile a main package with exactly the flags the
//     Makefile's build target uses (BuildFlags), so that make build, go test
//     and the tests' own builds share one build cache instead of each
//     compiling the module again with its own -tags or -trimpath.
//   - Tool: a tool binary built once by make test-tools from the pinned tools module
//     (make test-tools puts crictl in bin/tools); tests never go install.
//   - Eventually and Wait: poll for an observable state with a generous
//     deadline. The deadline only stops a broken test from hanging; nothing
//     here asserts how long anything took.
//   - ReservePort: a loopback TCP port whose listener the test keeps until
//     the daemon that is to serve on it starts, and takes back while the
//     daemon is down between restarts, so no other process can take it.
//   - ShortDir: a temporary directory short enough for unix socket paths.
//
// Time-dependent code is tested with testing/synctest or an injected clock,
// not with helpers here: a helper that slept would race the wall clock.
package testsupport
