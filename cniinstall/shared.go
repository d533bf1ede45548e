package cniinstall

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Outcome says what InstallShared did with a shared binary.
type Outcome int

const (
	// Installed: the binary was absent, or one sandboxipam installed
	// earlier, and is now the source's content.
	Installed Outcome = iota
	// Unchanged: the destination already held the source's content.
	Unchanged
	// KeptForeign: the destination holds a different binary that
	// sandboxipam did not install (or one it cannot read); it is left
	// as it is.
	KeptForeign
)

// Shared is what InstallShared did, and what it saw.
type Shared struct {
	Outcome Outcome
	// Path is the destination.
	Path string
	// Ours is the source's SHA-256; Found the destination's before, when
	// it was there and readable.
	Ours, Found string
	// Why says, for a kept binary, why it is not ours to replace.
	Why string
}

// InstallShared installs src into dstDir as InstallBinary does, for a
// binary the node's other networks may share (the reference portmap
// plugin): one that an operator or a package (kubernetes-cni) put there
// is theirs, so a different binary that sandboxipam did not install is
// kept, and the result says so for the caller to report. sandboxipam's
// own earlier installs it replaces: it remembers them by SHA-256 in a
// hidden record beside the binary (.sandboxipam-NAME.sha256), which
// names the new content before the binary is renamed into place and
// only it afterwards, so a crash between the two never makes its own
// binary look foreign.
func InstallShared(src, dstDir string) (Shared, error) {
	dst := filepath.Join(dstDir, filepath.Base(src))
	res := Shared{Path: dst}
	var err error
	if res.Ours, err = fileSHA256(src); err != nil {
		return res, fmt.Errorf("install %s: %w", src, err)
	}
	record := filepath.Join(dstDir, ".sandboxipam-"+filepath.Base(src)+".sha256")
	installed, err := readRecord(record)
	if err != nil {
		return res, fmt.Errorf("install %s: %w", src, err)
	}
	present, why := inspect(dst, &res)
	switch {
	case present && res.Found == res.Ours:
		res.Outcome = Unchanged
		return res, writeRecord(record, []string{res.Ours})
	case present && why != "":
		res.Outcome, res.Why = KeptForeign, why
		return res, nil
	case present && !slices.Contains(installed, res.Found):
		res.Outcome, res.Why = KeptForeign, "sandboxipam did not install it"
		return res, nil
	}
	if err := writeRecord(record, append(installed, res.Ours)); err != nil {
		return res, err
	}
	if err := InstallBinary(src, dstDir); err != nil {
		return res, err
	}
	return res, writeRecord(record, []string{res.Ours})
}

// inspect reports whether something is at dst and, when it is but its
// content cannot be read (a symlink into a filesystem this process does
// not see, say), why it cannot be proven ours. It sets res.Found when the
// content was read.
func inspect(dst string, res *Shared) (present bool, why string) {
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
		return false, ""
	} else if err != nil {
		return true, "cannot look at it: " + err.Error()
	}
	sum, err := fileSHA256(dst)
	if err != nil {
		return true, "cannot read it: " + err.Error()
	}
	res.Found = sum
	return true, ""
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readRecord returns the SHA-256 sums the record at path lists; none when
// it does not exist.
func readRecord(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the install record: %w", err)
	}
	return strings.Fields(string(b)), nil
}

func writeRecord(path string, sums []string) error {
	content := strings.Join(slices.Compact(sums), "\n") + "\n"
	if err := writeAtomic(path, 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, content)
		return err
	}); err != nil {
		return fmt.Errorf("write the install record %s: %w", path, err)
	}
	return nil
}
