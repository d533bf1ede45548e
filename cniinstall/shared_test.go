package cniinstall

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

const record = ".sandboxipam-portmap.sha256"

func sum(content string) string {
	s := sha256.Sum256([]byte(content))
	return hex.EncodeToString(s[:])
}

// source writes a portmap of the given content in a directory of its own.
func source(t *testing.T, content string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "portmap")
	writeFile(t, src, []byte(content), 0o755)
	return src
}

func installShared(t *testing.T, src, dst string, want Outcome) Shared {
	t.Helper()
	res, err := InstallShared(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != want || res.Path != filepath.Join(dst, "portmap") {
		t.Fatalf("InstallShared = %+v, want outcome %d at %s", res, want, filepath.Join(dst, "portmap"))
	}
	return res
}

func hasContent(t *testing.T, path, want string) {
	t.Helper()
	if got, err := os.ReadFile(path); err != nil || string(got) != want {
		t.Fatalf("%s holds %q (%v), want %q", path, got, err, want)
	}
}

// Absent: installed, and the record names exactly what was installed.
// Again with the same content: unchanged.
func TestInstallSharedInstallsWhenAbsent(t *testing.T) {
	dst := t.TempDir()
	res := installShared(t, source(t, "portmap v1"), dst, Installed)
	if res.Ours != sum("portmap v1") || res.Found != "" {
		t.Fatalf("sums %+v", res)
	}
	hasContent(t, filepath.Join(dst, "portmap"), "portmap v1")
	hasContent(t, filepath.Join(dst, record), sum("portmap v1")+"\n")
	onlyNames(t, dst, record, "portmap")
	installShared(t, source(t, "portmap v1"), dst, Unchanged)
	onlyNames(t, dst, record, "portmap")
}

// A portmap the operator put there is kept, whatever its version, and
// the result names both sums; no record is written for it.
func TestInstallSharedKeepsTheOperatorsPortMap(t *testing.T) {
	dst := t.TempDir()
	writeFile(t, filepath.Join(dst, "portmap"), []byte("the operator's portmap"), 0o755)
	res := installShared(t, source(t, "portmap v1"), dst, KeptForeign)
	if res.Found != sum("the operator's portmap") || res.Ours != sum("portmap v1") || res.Why != "sandboxipam did not install it" {
		t.Fatalf("result %+v", res)
	}
	hasContent(t, filepath.Join(dst, "portmap"), "the operator's portmap")
	onlyNames(t, dst, "portmap")
}

// sandboxipam's own earlier portmap is replaced by the new one; one the
// operator put there after it is kept.
func TestInstallSharedReplacesOnlyItsOwn(t *testing.T) {
	dst := t.TempDir()
	installShared(t, source(t, "portmap v1"), dst, Installed)
	installShared(t, source(t, "portmap v2"), dst, Installed)
	hasContent(t, filepath.Join(dst, "portmap"), "portmap v2")
	hasContent(t, filepath.Join(dst, record), sum("portmap v2")+"\n")
	writeFile(t, filepath.Join(dst, "portmap"), []byte("the operator's portmap"), 0o755)
	installShared(t, source(t, "portmap v3"), dst, KeptForeign)
	hasContent(t, filepath.Join(dst, "portmap"), "the operator's portmap")
}

// A crash after the record named the new content but before the rename
// leaves the old binary and a record listing both: the old one is still
// known as sandboxipam's and replaced on the next run.
func TestInstallSharedAfterACrashMidInstall(t *testing.T) {
	dst := t.TempDir()
	writeFile(t, filepath.Join(dst, "portmap"), []byte("portmap v1"), 0o755)
	writeFile(t, filepath.Join(dst, record), []byte(sum("portmap v1")+"\n"+sum("portmap v2")+"\n"), 0o644)
	installShared(t, source(t, "portmap v2"), dst, Installed)
	hasContent(t, filepath.Join(dst, "portmap"), "portmap v2")
	hasContent(t, filepath.Join(dst, record), sum("portmap v2")+"\n")
}

// A symlink whose target this process cannot see (a host path outside an
// init container's mounts) cannot be proven ours: kept, saying why.
func TestInstallSharedKeepsWhatItCannotRead(t *testing.T) {
	dst := t.TempDir()
	link := filepath.Join(dst, "portmap")
	if err := os.Symlink(filepath.Join(t.TempDir(), "absent", "portmap"), link); err != nil {
		t.Fatal(err)
	}
	res := installShared(t, source(t, "portmap v1"), dst, KeptForeign)
	if res.Found != "" || res.Why == "" {
		t.Fatalf("result %+v, want no sum and a reason", res)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v %v", fi, err)
	}
	onlyNames(t, dst, "portmap")
}
