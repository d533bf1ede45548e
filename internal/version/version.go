// Package version reports the version of the running sandboxipam binary.
package version

import "runtime/debug"

// Set at link time with -ldflags "-X .../internal/version.override=v1.2.3";
// otherwise the module version or VCS revision from the build info is used.
var override string

// String returns the binary's version: the link-time override, the module
// version, the VCS revision (with "+dirty"), or "dev".
func String() string {
	if override != "" {
		return override
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "dev"
	}
	return rev + dirty
}
