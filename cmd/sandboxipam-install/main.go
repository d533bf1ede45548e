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
//
// --help, -h and help print the usage and succeed.
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
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxipam-install:", err)
		os.Exit(1)
	}
}

const usage = `usage: sandboxipam-install COMMAND [flags]

Commands:
  install-binary --dst-dir DIR [--shared SRC]... SRC...
      copy the CNI plugin (SRC) into DIR, the node's CNI binary directory
      (default /host/opt/cni/bin); a --shared binary (portmap) is installed
      the same way, but one there that sandboxipam did not install is kept
  remove-conflist --path FILE
      remove ipamd's conflist, so the node reports its network NotReady
      (the ipamd container's preStop hook)
  write-conflist --path FILE < CONTENT
      write a conflist atomically from standard input
  help
      print this help (also -h, --help)

Examples:
  sandboxipam-install install-binary --dst-dir /host/opt/cni/bin --shared /sandboxipam/bin/portmap /sandboxipam/bin/sandboxipam
  sandboxipam-install remove-conflist --path /host/etc/cni/net.d/10-sandboxipam.conflist
  sandboxipam-install COMMAND -h   # the command's flags
`

// isHelp reports whether arg asks for the help, as an image's user types it.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// run runs one command; help goes to stdout. A command's -h prints its
// flags (on standard error, as the flag package does) and succeeds.
func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("no command given (try sandboxipam-install --help)")
	}
	if isHelp(args[0]) {
		_, err := io.WriteString(stdout, usage)
		return err
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	err := runCommand(fs, args, stdin)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func runCommand(fs *flag.FlagSet, args []string, stdin io.Reader) error {
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
		return fmt.Errorf("unknown command %q (try sandboxipam-install --help)", args[0])
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
