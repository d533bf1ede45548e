#!/bin/sh
# Builds cri-dockerd from the github.com/Mirantis/cri-dockerd module pinned
# in go.mod and caches it by version outside the repository, so a second run
# does not rebuild: cri-dockerd costs about 300 CPU-seconds cold.
#
#   tools/cri-dockerd/build.sh
#
# It talks to a dockerd the tests start privately (Debian's docker.io).
#
# Prints the cache directory on stdout. CRI_DOCKERD_CACHE_DIR overrides it.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
version=$(awk '$1 == "require" && $2 == "github.com/Mirantis/cri-dockerd" { print $3 }' "$here/go.mod")
cache=${CRI_DOCKERD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxipam/cri-dockerd/$version}
mkdir -p "$cache"

if [ ! -x "$cache/cri-dockerd" ]; then
	echo "cri-dockerd: building cri-dockerd $version (cold: about 90 s on 2 idle cores)" >&2
	start=$(date +%s)
	pkg=github.com/Mirantis/cri-dockerd/cmd/version
	# Build beside, then rename: an interrupted build never leaves a
	# binary the next run would take as complete.
	rm -f "$cache/cri-dockerd.partial"
	(cd "$here" && CGO_ENABLED=0 nice -n 19 go build -trimpath \
		-ldflags "-s -w -X $pkg.Version=${version#v} -X $pkg.GitCommit=$version" \
		-o "$cache/cri-dockerd.partial" github.com/Mirantis/cri-dockerd)
	mv "$cache/cri-dockerd.partial" "$cache/cri-dockerd"
	echo "cri-dockerd: built cri-dockerd in $(($(date +%s) - start)) s" >&2
else
	echo "cri-dockerd: cri-dockerd $version cached in $cache" >&2
fi
echo "$cache"
