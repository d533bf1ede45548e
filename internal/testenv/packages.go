package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// ErrMissingPackages: the runtimes' binaries are absent and could not be
// installed.
var ErrMissingPackages = errors.New("runtime packages missing")

// requiredCommands are the binaries the daemons need, looked up on PATH.
var requiredCommands = []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "dockerd", "ip", "nsenter", "unshare"}

// requiredFiles are binaries at fixed paths.
var requiredFiles = []string{DefaultCNIBinDir + "/bridge", DefaultCNIBinDir + "/host-local", DefaultCNIBinDir + "/loopback"}

// DefaultCNIBinDir is where Debian's containernetworking-plugins installs
// the reference plugins.
const DefaultCNIBinDir = "/usr/lib/cni"

// debianPackages provide every required command and file.
var debianPackages = []string{"containerd", "runc", "docker.io", "containernetworking-plugins", "iproute2", "util-linux"}

// EnsurePackages installs Debian's containerd, runc, docker.io, CNI
// plugins and iproute2 when any of their binaries is missing. It needs root
// and apt; on a machine that has them all it only looks.
func EnsurePackages(ctx context.Context) error {
	missing := missingBinaries()
	if len(missing) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: %v, and installing needs root", ErrMissingPackages, missing)
	}
	release, err := holdServiceStarts()
	if err != nil {
		return err
	}
	defer release()
	if err := aptGet(ctx, "update"); err != nil {
		return err
	}
	args := append([]string{"install", "-y", "--no-install-recommends"}, debianPackages...)
	if err := aptGet(ctx, args...); err != nil {
		return err
	}
	if still := missingBinaries(); len(still) > 0 {
		return fmt.Errorf("%w after apt-get install: %v", ErrMissingPackages, still)
	}
	return nil
}

// policyRCD is Debian's hook that maintainer scripts ask before they start
// a service; exit code 101 means "do not".
const policyRCD = "/usr/sbin/policy-rc.d"

// holdServiceStarts keeps apt from starting the packages' system daemons:
// docker.io's init script would start a dockerd that creates a docker0
// bridge and iptables rules on the host. A policy the machine already has
// is left alone.
func holdServiceStarts() (release func(), err error) {
	if _, err := os.Lstat(policyRCD); err == nil {
		return func() {}, nil
	}
	if err := os.WriteFile(policyRCD, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
		return nil, fmt.Errorf("hold service starts: %w", err)
	}
	return func() { _ = os.Remove(policyRCD) }, nil
}

func missingBinaries() []string {
	var missing []string
	for _, name := range requiredCommands {
		if _, err := exec.LookPath(name); err != nil {
			missing = append(missing, name)
		}
	}
	for _, path := range requiredFiles {
		if _, err := os.Stat(path); err != nil {
			missing = append(missing, path)
		}
	}
	return missing
}

func aptGet(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	// A package's maintainer scripts must not wait for a terminal.
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: apt-get %v: %v: %s", ErrMissingPackages, args, err, tail(out, 2000))
	}
	return nil
}

// tail returns at most the last n bytes of b, for error messages.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
