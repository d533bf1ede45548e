package cniinstall

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

const validConfList = `{"cniVersion": "1.0.0", "name": "sandboxipam",
 "plugins": [{"type": "sandboxipam", "ipamdSocket": "/run/sandboxipam/ipamd.sock"}]}`

func writeFile(t *testing.T, path string, content []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, content, mode); err != nil {
		t.Fatal(err)
	}
}

// onlyNames fails unless dir holds exactly the given names: no temporary
// file may survive a write, successful or not.
func onlyNames(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if len(got) != len(want) {
		t.Fatalf("%s holds %q, want %q", dir, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s holds %q, want %q", dir, got, want)
		}
	}
}

func TestInstallBinaryCopiesContentAndMode(t *testing.T) {
	src := filepath.Join(t.TempDir(), "sandboxipam")
	content := bytes.Repeat([]byte("\x7fELF-plugin"), 10000)
	writeFile(t, src, content, 0o600)
	dst := t.TempDir()

	if err := InstallBinary(src, dst); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dst, "sandboxipam"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, content) {
		t.Fatalf("installed %d bytes, want the %d of the source", len(got), len(content))
	}
	info, err := os.Stat(filepath.Join(dst, "sandboxipam"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v, want 0755", info.Mode().Perm())
	}
	onlyNames(t, dst, "sandboxipam")
}

func TestInstallBinaryReplacesExisting(t *testing.T) {
	src := filepath.Join(t.TempDir(), "sandboxipam")
	writeFile(t, src, []byte("new"), 0o755)
	dst := t.TempDir()
	writeFile(t, filepath.Join(dst, "sandboxipam"), []byte("old, longer than new"), 0o755)

	if err := InstallBinary(src, dst); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dst, "sandboxipam"))
	if string(got) != "new" {
		t.Fatalf("installed %q, want %q", got, "new")
	}
	onlyNames(t, dst, "sandboxipam")
}

func TestInstallBinaryMissingSourceLeavesDestinationAlone(t *testing.T) {
	dst := t.TempDir()
	writeFile(t, filepath.Join(dst, "sandboxipam"), []byte("old"), 0o755)
	err := InstallBinary(filepath.Join(t.TempDir(), "sandboxipam"), dst)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want one wrapping ErrNotExist", err)
	}
	got, _ := os.ReadFile(filepath.Join(dst, "sandboxipam"))
	if string(got) != "old" {
		t.Fatalf("destination now %q, want it untouched", got)
	}
	onlyNames(t, dst, "sandboxipam")
}

func TestInstallBinaryRefusesDirectorySource(t *testing.T) {
	err := InstallBinary(t.TempDir(), t.TempDir())
	if err == nil {
		t.Fatal("installing a directory succeeded")
	}
}

func TestInstallBinaryMissingDestinationDir(t *testing.T) {
	src := filepath.Join(t.TempDir(), "sandboxipam")
	writeFile(t, src, []byte("x"), 0o755)
	err := InstallBinary(src, filepath.Join(t.TempDir(), "absent"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want one wrapping ErrNotExist", err)
	}
}

// TestInstallBinaryNeverHalfWritten reads the destination while it is
// replaced over and over: every read must see one whole version.
func TestInstallBinaryNeverHalfWritten(t *testing.T) {
	srcDir := t.TempDir()
	versions := [][]byte{
		bytes.Repeat([]byte{'a'}, 1<<20),
		bytes.Repeat([]byte{'b'}, 1<<19),
	}
	dst := t.TempDir()
	target := filepath.Join(dst, "plugin")
	writeFile(t, target, versions[0], 0o755)

	const installs = 40
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	reads := 0
	var bad []int
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			got, err := os.ReadFile(target)
			if err != nil {
				bad = append(bad, -1)
				continue
			}
			reads++
			if !bytes.Equal(got, versions[0]) && !bytes.Equal(got, versions[1]) {
				bad = append(bad, len(got))
			}
		}
	}()
	for i := range installs {
		src := filepath.Join(srcDir, "plugin")
		writeFile(t, src, versions[i%2], 0o755)
		if err := InstallBinary(src, dst); err != nil {
			close(done)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of %d reads saw a partial or missing file (sizes %v)", len(bad), reads+len(bad), bad)
	}
	onlyNames(t, dst, "plugin")
}

func TestWriteConfList(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "10-sandboxipam.conflist")
	if err := WriteConfList(path, []byte(validConfList)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != validConfList {
		t.Fatalf("wrote %q", got)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644", info.Mode().Perm())
	}
	onlyNames(t, dir, "10-sandboxipam.conflist")

	// Rewriting replaces it whole.
	other := `{"cniVersion": "1.1.0", "name": "sandboxipam", "plugins": [{"type": "sandboxipam"}]}`
	if err := WriteConfList(path, []byte(other)); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(path)
	if string(got) != other {
		t.Fatalf("rewrote %q", got)
	}
	onlyNames(t, dir, "10-sandboxipam.conflist")
}

func TestWriteConfListRejectsBadInput(t *testing.T) {
	cases := []struct {
		name, file, content string
	}{
		{"not JSON", "10-x.conflist", `{"name":`},
		{"no name", "10-x.conflist", `{"cniVersion": "1.0.0", "plugins": [{"type": "x"}]}`},
		{"empty plugins", "10-x.conflist", `{"cniVersion": "1.0.0", "name": "x", "plugins": []}`},
		{"no plugins key", "10-x.conflist", `{"cniVersion": "1.0.0", "name": "x"}`},
		{"plugin without type", "10-x.conflist", `{"cniVersion": "1.0.0", "name": "x", "plugins": [{}]}`},
		{"extension libcni ignores", "10-x.yaml", validConfList},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			err := WriteConfList(filepath.Join(dir, c.file), []byte(c.content))
			if !errors.Is(err, ErrInvalidConfList) {
				t.Fatalf("err = %v, want ErrInvalidConfList", err)
			}
			onlyNames(t, dir)
		})
	}
}

func TestWriteConfListMissingDir(t *testing.T) {
	err := WriteConfList(filepath.Join(t.TempDir(), "absent", "10-x.conflist"), []byte(validConfList))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want one wrapping ErrNotExist", err)
	}
}

func TestRemoveConfList(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "10-sandboxipam.conflist")
	keep := filepath.Join(dir, "99-other.conflist")
	writeFile(t, path, []byte(validConfList), 0o644)
	writeFile(t, keep, []byte(validConfList), 0o644)

	if err := RemoveConfList(path); err != nil {
		t.Fatal(err)
	}
	onlyNames(t, dir, "99-other.conflist")
	// A second preStop, or one after a crash, finds nothing: still fine.
	if err := RemoveConfList(path); err != nil {
		t.Fatalf("second remove: %v", err)
	}
	onlyNames(t, dir, "99-other.conflist")
}

func TestRemoveConfListRefusesDirectory(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "net.d")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(sub, "x"), nil, 0o644)
	if err := RemoveConfList(sub); err == nil {
		t.Fatal("removing a non-empty directory succeeded")
	}
}

// FuzzWriteConfList: whatever the content, WriteConfList either writes it
// byte for byte or refuses it with ErrInvalidConfList and writes nothing.
func FuzzWriteConfList(f *testing.F) {
	f.Add([]byte(validConfList))
	f.Add([]byte(`{"name": "x", "plugins": [{"type": "y"}]}`))
	f.Add([]byte(`{"name": "x", "plugins": 1}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"name": "x", "disableCheck": "maybe", "plugins": [{"type": "y"}]}`))
	f.Fuzz(func(t *testing.T, content []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "10-x.conflist")
		err := WriteConfList(path, content)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfList) {
				t.Fatalf("err = %v, want ErrInvalidConfList", err)
			}
			onlyNames(t, dir)
			return
		}
		got, rerr := os.ReadFile(path)
		if rerr != nil || !bytes.Equal(got, content) {
			t.Fatalf("read back %q, %v", got, rerr)
		}
		onlyNames(t, dir, "10-x.conflist")
	})
}
