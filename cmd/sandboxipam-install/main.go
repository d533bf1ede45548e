// Command sandboxipam-install puts the CNI plugin on a node and takes the
// conflist off it, for images without a shell: the DaemonSet's init
// container runs "install-binary", and the ipamd container's preStop hook
// runs "remove-conflist", so a node whose ipamd is gone reports its network
// NotReady instead of failing pods. ipamd itself writes the conflist once
// it is ready to answer ADD.
//
// A --shared binary (the reference portmap plugin, which ours runs for
// hostPorts) may serve the node's other networks too: it is installed the
// same way, but a different one that sandboxipam did not install is kept,
// and a line on standard error says so (cniinstall.InstallShared).
//
//	sandboxipam-install install-binary --dst-dir /host/opt/cni/bin [--shared /sandboxipam/bin/portmap] /sandboxipam/bin/sandboxipam
//	sandboxipam-install remove-conflist --path /host/etc/cni/net.d/10-sandboxipam.conflist
//	sandboxipam-install write-conflist --path FILE.conflist < content
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sandboxipam/sandboxipam/cniinstall"
	"github.com/sandboxipam/sandboxipam/internal/version"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("sandboxipam-install"))
		return
	}
	if err := run(os.Args[1:], os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxipam-install:", err)
		os.Exit(1)
	}
}

const usage = "usage: sandboxipam-install install-binary --dst-dir DIR [--shared SRC]... SRC... | remove-conflist --path FILE | write-conflist --path FILE < CONTENT"

func run(args []string, stdin io.Reader) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	switch args[0] {
	case "install-binary":
		return installBinaries(fs, args[1:])
	case "remove-conflist", "write-conflist":
		path := fs.String("path", "", "conflist file (required)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *path == "" || fs.NArg() != 0 {
			return fmt.Errorf("%s: --path FILE is required and takes no other arguments", args[0])
		}
		if args[0] == "remove-conflist" {
			return cniinstall.RemoveConfList(*path)
		}
		content, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("write-conflist: read standard input: %w", err)
		}
		return cniinstall.WriteConfList(*path, content)
	default:
		return fmt.Errorf("unknown command %q; %s", args[0], usage)
	}
}

// sources collects a repeated flag's values.
type sources []string

func (s *sources) String() string     { return fmt.Sprint(*s) }
func (s *sources) Set(v string) error { *s = append(*s, v); return nil }

func installBinaries(fs *flag.FlagSet, args []string) error {
	dst := fs.String("dst-dir", "/host/opt/cni/bin", "CNI binary directory to install into")
	var shared sources
	fs.Var(&shared, "shared", "a binary other networks may share (portmap): a different one sandboxipam did not install is kept (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 && len(shared) == 0 {
		return errors.New("install-binary: no source binary given")
	}
	for _, src := range fs.Args() {
		if err := cniinstall.InstallBinary(src, *dst); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "installed %s into %s\n", src, *dst)
	}
	for _, src := range shared {
		res, err := cniinstall.InstallShared(src, *dst)
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, describe(src, res))
	}
	return nil
}

// describe is the line the init container's log keeps for a shared binary.
func describe(src string, res cniinstall.Shared) string {
	switch res.Outcome {
	case cniinstall.Installed:
		return fmt.Sprintf("installed %s into %s (sha256 %s)", src, res.Path, res.Ours)
	case cniinstall.Unchanged:
		return fmt.Sprintf("%s already holds %s (sha256 %s)", res.Path, src, res.Ours)
	}
	found := "unreadable"
	if res.Found != "" {
		found = "sha256 " + res.Found
	}
	return fmt.Sprintf("WARNING: kept the %s already at %s (%s): %s, so it is not replaced with sandboxipam's (sha256 %s); "+
		"the conflist ipamd writes chains whichever is there. To use sandboxipam's, remove that file and restart this pod",
		filepath.Base(res.Path), res.Path, found, res.Why, res.Ours)
}
