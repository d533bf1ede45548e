package kubernetes

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"

	"github.com/sandboxipam/sandboxipam/internal/image"
)

// glibcDNSRef is the DNS tests' glibc prober image, by the name the
// v1.37.2 framework's image manifest gives it (GlibcDnsTesting, formerly
// jessie-dnsutils).
const glibcDNSRef = "registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1"

// glibcDNSTools are the prober's commands by their path in the image and
// on the host: the probes run `sh -c` with dig, getent, seq and sleep
// (test and echo are the shell's own). dig is Debian's bind9-dnsutils,
// which `.ci/run` installs.
var glibcDNSTools = map[string]string{
	"/bin/sh": "/bin/dash", "/usr/bin/dig": "/usr/bin/dig", "/usr/bin/getent": "/usr/bin/getent",
	"/usr/bin/seq": "/usr/bin/seq", "/usr/bin/sleep": "/usr/bin/sleep", "/usr/bin/cat": "/usr/bin/cat",
}

// glibcDNSSpec lays out the glibc prober image as its Dockerfile does
// (test/images/glibc-dns-testing: Debian bookworm-slim with dnsutils),
// from this Debian 12 (bookworm) host's own packages: each command of
// glibcDNSTools with the libraries ldd says it loads, and an nsswitch.conf
// that resolves hosts by the hosts file, then DNS, as Debian's does. The
// CoreDNS release its Dockerfile also adds serves none of the tests run
// here.
func glibcDNSSpec() (image.Spec, error) {
	if _, err := exec.LookPath("dig"); err != nil {
		return image.Spec{}, fmt.Errorf("the glibc DNS prober image needs dig: apt-get install bind9-dnsutils (%w)", err)
	}
	files := maps.Clone(glibcDNSTools)
	for _, bin := range slices.Sorted(maps.Keys(glibcDNSTools)) {
		libs, err := sharedLibraries(glibcDNSTools[bin])
		if err != nil {
			return image.Spec{}, err
		}
		for _, l := range libs {
			files[l] = l
		}
	}
	entries := []image.Entry{{Path: "/tmp", Dir: true, Mode: 0o1777},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Content: []byte("hosts: files dns\n")},
		{Path: "/etc/passwd", Mode: 0o644, Content: []byte("root:x:0:0:root:/root:/bin/sh\n")}}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		b, err := os.ReadFile(files[p])
		if err != nil {
			return image.Spec{}, fmt.Errorf("glibc DNS prober image: %w", err)
		}
		entries = append(entries, image.Entry{Path: p, Mode: 0o755, Content: b})
	}
	return image.Spec{Entries: entries, Cmd: []string{"/bin/sh"}}, nil
}
