#!/bin/sh
# Builds CoreDNS, the cluster DNS of the e2e-conformance suite, and caches it
# by version outside the repository, so a second run does not rebuild.
#
#   tools/coredns/build.sh
#
# Prints the cache directory on stdout. COREDNS_CACHE_DIR overrides it.
set -eu

version=v1.15.0
here=$(cd "$(dirname "$0")" && pwd)
cache=${COREDNS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxipam/coredns/$version}
mkdir -p "$cache"

if [ -x "$cache/coredns" ]; then
	echo "coredns: $version cached in $cache" >&2
else
	echo "coredns: building $version" >&2
	start=$(date +%s)
	# The binary reports its version from the module; gitCommit is left
	# empty rather than invented.
	(cd "$here" && CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags "-s -w" \
		-o "$cache/.coredns.partial" github.com/coredns/coredns)
	mv "$cache/.coredns.partial" "$cache/coredns"
	echo "coredns: built $version in $(($(date +%s) - start)) s" >&2
fi
echo "$cache"
