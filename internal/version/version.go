// Package version reports the version of the running sandboxipam binary.
//
// A binary's version is the release its tree becomes (Release) with the
// commit it was built from as semver build metadata, v0.2.0+5353417e5405
// (".dirty" appended when the work tree had changes), so that two builds of
// one release are told apart; a release build links its bare version in
// (make build VERSION=v0.2.0). An image tag cannot hold "+": images are
// tagged with the release alone (Split).
package version

import (
	"runtime/debug"
	"strings"
)

// Release is the release this tree becomes: release.Current's version, the
// image tag deploy/kubernetes references, and the start of every binary's
// version. Bump it when a release is cut (internal/release says how).
const Release = "v0.2.0"

// Set at link time with -ldflags "-X .../internal/version.override=v1.2.3";
// otherwise String derives the version from Release and the build info.
var override string

// String returns the binary's version: the link-time override; else, for
// a build from a git checkout, Release with the commit go build stamped
// (Release+"+"+12 hex digits, ".dirty" after them for a modified work
// tree; go's own pseudo-version of the main module, which Go 1.24 and
// later stamp too, says less); else the module version (go install
// ...@v0.2.0); else Release alone (a build without VCS information, as the
// image's -buildvcs=false binaries are).
func String() string {
	if override != "" {
		return override
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Release
	}
	if v := withRevision(info.Settings); v != "" {
		return v
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return Release
}

// withRevision is Release with the VCS revision in settings, or "" when
// the build recorded none.
func withRevision(settings []debug.BuildSetting) string {
	var rev, dirty string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ".dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return Release + "+" + rev + dirty
}

// Split parses a version String returned (or a --version line's last
// word): the release, as v0.2.0, and the build metadata after "+" (the
// commit, with ".dirty"), empty for a release build.
func Split(v string) (release, build string) {
	release, build, _ = strings.Cut(v, "+")
	return release, build
}
