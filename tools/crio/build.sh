#!/bin/sh
# Builds CRI-O (crio and pinns) from the github.com/cri-o/cri-o module pinned
# in go.mod and caches them by version outside the repository, so a second
# run does not rebuild: crio costs about 250 CPU-seconds cold.
#
#   tools/crio/build.sh
#
# Needs cgo and Debian's libseccomp-dev (the seccomp tag), and a C compiler
# for pinns (C in the same module, built static). conmon and runc are
# Debian's; the tests find them on PATH.
#
# Prints the cache directory on stdout. CRIO_CACHE_DIR overrides it.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
version=$(awk '$1 == "require" && $2 == "github.com/cri-o/cri-o" { print $3 }' "$here/go.mod")
cache=${CRIO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxipam/crio/$version}
mkdir -p "$cache"

# The tags CRI-O's own Makefile uses for a build without btrfs,
# devicemapper, ostree or gpgme development files.
tags="containers_image_openpgp containers_image_ostree_stub exclude_graphdriver_btrfs btrfs_noversion exclude_graphdriver_devicemapper seccomp"

if [ ! -x "$cache/crio" ]; then
	echo "crio: building crio $version (cold: about 150 s on 2 idle cores)" >&2
	start=$(date +%s)
	# Build beside, then rename: an interrupted build never leaves a
	# binary the next run would take as complete.
	rm -f "$cache/crio.partial"
	(cd "$here" && CGO_ENABLED=1 nice -n 19 go build -trimpath -tags "$tags" \
		-ldflags "-s -w" \
		-o "$cache/crio.partial" github.com/cri-o/cri-o/cmd/crio)
	mv "$cache/crio.partial" "$cache/crio"
	echo "crio: built crio in $(($(date +%s) - start)) s" >&2
else
	echo "crio: crio $version cached in $cache" >&2
fi

if [ ! -x "$cache/pinns" ]; then
	echo "crio: building pinns $version" >&2
	src=$(cd "$here" && go list -m -f '{{.Dir}}' github.com/cri-o/cri-o)/pinns/src
	rm -f "$cache/pinns.partial"
	# shellcheck disable=SC2046 # one word per source file
	nice -n 19 "${CC:-cc}" -static -Os -std=c99 -Wall -o "$cache/pinns.partial" \
		$(ls "$src"/*.c)
	mv "$cache/pinns.partial" "$cache/pinns"
else
	echo "crio: pinns $version cached in $cache" >&2
fi
echo "$cache"
