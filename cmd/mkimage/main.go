// Command mkimage builds the sandboxipam container image without a
// registry or a Docker daemon ("make image"): it compiles the static
// binaries, lays them out with Debian's CA bundle on an empty base, and
// writes an OCI image archive and a docker-save archive of the same image.
// The same sources, toolchain and CA bundle give the same digest.
//
//	go run ./cmd/mkimage --out dist
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/sandboxipam/sandboxipam/internal/image"
	"github.com/sandboxipam/sandboxipam/internal/version"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Line("mkimage"))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	out := fs.String("out", "dist", "directory for the archives")
	ref := fs.String("ref", image.DefaultRef, "image reference (with a tag)")
	ca := fs.String("ca-certs", image.DefaultCABundle, "CA bundle to put in the image (Debian's ca-certificates)")
	module := fs.String("module", ".", "root of the sandboxipam module to build")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return errors.New("no arguments expected besides flags")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	binDir, err := os.MkdirTemp(*out, ".bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	a, err := image.BuildProjectArchives(ctx, *module, binDir, *ca, *ref, *out)
	if err != nil {
		return err
	}
	fmt.Printf("%s\n  digest %s\n  OCI archive    %s\n  docker archive %s\n", *ref, a.Digest, a.OCI, a.Docker)
	return nil
}
