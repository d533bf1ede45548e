package testsupport

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// IsCI reports whether the tests run in CI: CI is set to anything but "",
// "false" or "0" (CI systems variously set true, 1 or yes).
func IsCI() bool {
	return isCI(os.Getenv("CI"))
}

func isCI(v string) bool {
	v = strings.TrimSpace(v)
	return v != "" && !strings.EqualFold(v, "false") && v != "0"
}

// SkipOrFail skips t with the reason, or fails it in CI, where every test
// must run: a skip there would hide a gap in what was tested.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if IsCI() {
		t.Fatalf("CI is set and this test cannot run: %s", reason)
		return
	}
	t.Skipf("skipping: %s", reason)
}
