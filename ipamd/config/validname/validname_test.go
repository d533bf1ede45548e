package validname

import (
	"strings"
	"testing"
)

func TestIfName(t *testing.T) {
	for name, want := range map[string]string{
		"eth0":                  "",
		"net1":                  "",
		strings.Repeat("a", 15): "",
		"":                      "must not be empty",
		strings.Repeat("a", 16): "is 16 bytes, longer than 15",
		".":                     "is not a valid interface name",
		"..":                    "is not a valid interface name",
		"a/b":                   "contains '/'",
		"eth0:1":                "contains ':', whitespace or NUL",
		"eth 0":                 "contains ':', whitespace or NUL",
		"eth\x000":              "contains ':', whitespace or NUL",
	} {
		err := IfName(name)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("IfName(%q) = %q, want %q", name, got, want)
		}
	}
}

// FuzzIfName holds the checks' promise: an accepted name is one the kernel
// takes (1-15 bytes, none of / : whitespace NUL, not . or ..).
func FuzzIfName(f *testing.F) {
	for _, seed := range []string{"eth0", "", ".", "a/b", "x:y", strings.Repeat("z", 16)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if IfName(name) != nil {
			return
		}
		if len(name) < 1 || len(name) > 15 || name == "." || name == ".." || strings.ContainsAny(name, "/: \t\n\r\x00") {
			t.Errorf("IfName(%q) accepted a name the kernel refuses", name)
		}
	})
}
