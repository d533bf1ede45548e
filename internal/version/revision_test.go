package version

import (
	"runtime/debug"
	"testing"
)

func TestWithRevision(t *testing.T) {
	rev := "5353417e54050f78aae58a60afdec436bb984fa2"
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"no VCS", nil, ""},
		{"clean", []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}, Release + "+5353417e5405"},
		{"dirty", []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}, Release + "+5353417e5405.dirty"},
		{"modified without a revision", []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, ""},
	} {
		if got := withRevision(tc.settings); got != tc.want {
			t.Errorf("%s: withRevision = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct{ v, release, build string }{
		{"v0.2.0", "v0.2.0", ""},
		{"v0.2.0+5353417e5405", "v0.2.0", "5353417e5405"},
		{"v0.2.0+5353417e5405.dirty", "v0.2.0", "5353417e5405.dirty"},
	} {
		if r, b := Split(tc.v); r != tc.release || b != tc.build {
			t.Errorf("Split(%q) = %q, %q; want %q, %q", tc.v, r, b, tc.release, tc.build)
		}
	}
}
