// Command sandboxipam-install puts the CNI plugin on a node and takes the
// conflist off it, for images without a shell: the DaemonSet's init
// container runs "install-binary", and the ipamd container's preStop hook
// runs "remove-conflist", so a node whose ipamd is gone reports its network
// NotReady instead of failing pods. ipamd itself writes the conflist once
// it is ready to answer ADD.
//
//	sandboxipam-install install-binary --dst-dir /host/opt/cni/bin /sandboxipam/bin/sandboxipam
//	sandboxipam-install remove-conflist --path /host/etc/cni/net.d/10-sandboxipam.conflist
//	sandboxipam-install write-conflist --path FILE.conflist < content
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

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

const usage = "usage: sandboxipam-install install-binary --dst-dir DIR SRC... | remove-conflist --path FILE | write-conflist --path FILE < CONTENT"

func run(args []string, stdin io.Reader) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	switch args[0] {
	case "install-binary":
		dst := fs.String("dst-dir", "/host/opt/cni/bin", "CNI binary directory to install into")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			return errors.New("install-binary: no source binary given")
		}
		for _, src := range fs.Args() {
			if err := cniinstall.InstallBinary(src, *dst); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "installed %s into %s\n", src, *dst)
		}
		return nil
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
