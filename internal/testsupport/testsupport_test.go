package testsupport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestIsCI(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "false": false, "FALSE": false, "0": false, " ": false,
		"true": true, "1": true, "yes": true, "TRUE": true,
	} {
		if got := isCI(v); got != want {
			t.Errorf("isCI(%q) = %v, want %v", v, got, want)
		}
	}
}

// recorder is a testing.TB whose Fatalf and Skipf record instead of
// stopping the goroutine, so the helpers' failure paths can be checked.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recorder) Skipf(format string, args ...any)  { r.skip = fmt.Sprintf(format, args...) }

func TestSkipOrFail(t *testing.T) {
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	SkipOrFail(r, "needs %s", "root")
	if r.skip != "skipping: needs root" || r.fatal != "" {
		t.Errorf("CI unset: skip %q, fatal %q; want a skip", r.skip, r.fatal)
	}
	t.Setenv("CI", "1")
	r = &recorder{TB: t}
	SkipOrFail(r, "needs %s", "root")
	if r.fatal != "CI is set and this test cannot run: needs root" || r.skip != "" {
		t.Errorf("CI=1: skip %q, fatal %q; want a failure", r.skip, r.fatal)
	}
}

func TestEventuallyPollsUntilTrue(t *testing.T) {
	calls := 0
	Eventually(t, "the third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
}

func TestWaitReportsLastState(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out WaitDeadline")
	}
	// No clock to race: the condition never holds, so only the deadline
	// can end the wait. Run in a bubble so the two minutes pass at once.
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{TB: t}
		n := 0
		Wait(r, "never", func() (bool, string) { n++; return false, fmt.Sprintf("call %d", n) })
		want := fmt.Sprintf("never: not within %s (context deadline exceeded): last state: call %d", WaitDeadline, n)
		if r.fatal != want {
			t.Errorf("failure = %q, want %q", r.fatal, want)
		}
	})
}

func TestPollEndsAtOnceOnGiveUp(t *testing.T) {
	calls := 0
	err := Poll(t.Context(), "the process", func(context.Context) error {
		calls++
		if calls == 2 {
			return fmt.Errorf("process exited: %w", ErrGiveUp)
		}
		return errors.New("not yet")
	})
	if !errors.Is(err, ErrGiveUp) || calls != 2 || err.Error() != "the process: process exited: gave up waiting" {
		t.Errorf("Poll = %v after %d calls, want the give-up after 2", err, calls)
	}
}

// The condition's last error before the deadline is the one reported: a
// call cut short by the deadline says nothing about the condition.
func TestPollReportsTheLastErrorBeforeTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		n := 0
		err := Poll(ctx, "ready", func(ctx context.Context) error {
			n++
			time.Sleep(400 * time.Millisecond) // a slow call; the third outlives the deadline
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("attempt %d", n)
		})
		if want := "ready: not within 1.203s (context deadline exceeded): attempt 2"; err == nil || err.Error() != want || n != 3 {
			t.Errorf("Poll = %v after %d calls, want %q after 3", err, n, want)
		}
	})
}

func TestModuleRoot(t *testing.T) {
	root := Root(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if rel, err := filepath.Rel(root, wd); err != nil || rel != filepath.Join("internal", "testsupport") {
		t.Errorf("root %s is not two levels above %s", root, wd)
	}
}

func TestReservePortHoldsUntilRelease(t *testing.T) {
	p := ReservePort(t)
	if _, err := net.Listen("tcp", p.Addr); err == nil {
		t.Fatalf("%s could be bound while reserved", p.Addr)
	}
	p.Release()
	daemon, err := net.Listen("tcp", p.Addr) // the daemon takes it over
	if err != nil {
		t.Fatalf("bind %s after Release: %v", p.Addr, err)
	}
	if err := p.Hold(); err == nil {
		t.Fatal("Hold succeeded while the daemon listens")
	}
	daemon.Close()
	if err := p.Hold(); err != nil {
		t.Fatalf("Hold after the daemon exited: %v", err)
	}
	if l, err := net.Listen("tcp", p.Addr); err == nil {
		l.Close()
		t.Fatalf("%s could be bound while held again", p.Addr)
	}
}

func TestShortDir(t *testing.T) {
	dir := ShortDir(t, "ts-")
	if len(dir) > maxSocketDir {
		t.Errorf("%s is %d bytes, want at most %d", dir, len(dir), maxSocketDir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("stat %s: %v", dir, err)
	}
}

// TestBuildFlagsMatchMakefile: the tests' builds share make build's cache
// only if both compile with the same flags.
func TestBuildFlagsMatchMakefile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(Root(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var value string
	found := false
	for line := range strings.SplitSeq(string(data), "\n") {
		if name, v, ok := strings.Cut(line, ":="); ok && strings.TrimSpace(name) == "GOFLAGS_BUILD" {
			value, found = strings.TrimSpace(v), true
		}
	}
	if !found {
		t.Fatal("the Makefile defines no GOFLAGS_BUILD")
	}
	if got := compileFlags(value); !slices.Equal(got, BuildFlags()) {
		t.Errorf("Makefile GOFLAGS_BUILD compiles with %q, BuildFlags() = %q", got, BuildFlags())
	}
}

// compileFlags splits the Makefile's flags as the shell does (quotes
// group) and drops -ldflags and its value: they change only the link step,
// whose output no cache shares anyway.
func compileFlags(flags string) []string {
	var fields []string
	var cur strings.Builder
	quote := rune(0)
	for _, r := range flags + " " {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote = r
		case r == ' ' || r == '\t':
			if cur.Len() > 0 {
				fields = append(fields, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	var out []string
	for i := 0; i < len(fields); i++ {
		switch f := fields[i]; {
		case f == "-ldflags":
			i++ // and its value
		case strings.HasPrefix(f, "-ldflags="):
		default:
			out = append(out, f)
		}
	}
	return out
}

func TestCompileFlags(t *testing.T) {
	got := compileFlags(`-trimpath -ldflags "-X a.b=c -s" -tags=x -ldflags='-w'`)
	if want := []string{"-trimpath", "-tags=x"}; !slices.Equal(got, want) {
		t.Errorf("compileFlags = %q, want %q", got, want)
	}
}

func TestStaticBinaryIsBuiltOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles cmd/pause")
	}
	p := StaticBinary(t, "./cmd/pause")
	if filepath.Base(p) != "pause" {
		t.Errorf("binary %s, want .../pause", p)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("stat %s: %v, %v", p, fi, err)
	}
	if again := StaticBinary(t, "./cmd/pause"); again != p {
		t.Errorf("second call = %s, want %s", again, p)
	}
	if fi2, err := os.Stat(p); err != nil || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Errorf("the second call rebuilt %s", p)
	}
}

func TestRequireRootNamesWhatIsMissing(t *testing.T) {
	found := func(string) (string, error) { return "/usr/sbin/ip", nil }
	absent := func(name string) (string, error) {
		return "", &os.PathError{Op: "lookpath", Path: name, Err: os.ErrNotExist}
	}
	cases := []struct {
		euid     int
		lookPath func(string) (string, error)
		tools    []string
		want     string
	}{
		{0, found, []string{"ip"}, ""},
		{0, absent, nil, ""},
		{1000, found, nil, "needs root: runs as uid 1000"},
		{1000, found, []string{"ip", "mount"}, "needs root and ip, mount: runs as uid 1000"},
		{0, absent, []string{"ip"}, "needs root and ip: ip is not on PATH"},
	}
	for _, tc := range cases {
		if got := missing(tc.euid, tc.lookPath, tc.tools); got != tc.want {
			t.Errorf("missing(%d, %v) = %q, want %q", tc.euid, tc.tools, got, tc.want)
		}
	}
	t.Setenv("CI", "1")
	if os.Geteuid() == 0 {
		r := &recorder{TB: t}
		RequireRoot(r, "no-such-tool-sandboxipam")
		if r.fatal != "CI is set and this test cannot run: needs root and no-such-tool-sandboxipam: no-such-tool-sandboxipam is not on PATH" {
			t.Errorf("RequireRoot in CI without the tool: fatal %q, skip %q", r.fatal, r.skip)
		}
	}
}
