#!/bin/sh
# Builds the Kubernetes components the e2e-kubernetes suite runs and caches
# them by version outside the repository, so a second run does not rebuild:
# kubelet alone costs about 1,500 CPU-seconds cold.
#
#   tools/kubernetes/build.sh [component ...]
#
# Components: kubelet kube-apiserver kube-controller-manager kube-scheduler
# (built from k8s.io/kubernetes) and etcd (Debian's etcd-server, unpacked
# here, never installed: no service is registered or started). Default: all.
#
# Prints the cache directory on stdout. KUBE_CACHE_DIR overrides it.
set -eu

version=v1.37.2
crictl_version=v1.37.0
here=$(cd "$(dirname "$0")" && pwd)
cache=${KUBE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxipam/kubernetes/$version}
mkdir -p "$cache"

if [ $# -eq 0 ]; then
	set -- kubelet kube-apiserver kube-controller-manager kube-scheduler etcd
fi

# Without these the binaries report v0.0.0-master, and kubelet refuses to
# register with an apiserver whose version it cannot compare.
major=$(echo "$version" | sed -E 's/^v([0-9]+)\..*/\1/')
minor=$(echo "$version" | sed -E 's/^v[0-9]+\.([0-9]+)\..*/\1/')
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags="$ldflags -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
	ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

# crictl compares what kubelet's runtime reports with ipamctl's view.
if [ ! -x "$cache/crictl" ]; then
	echo "kubernetes: installing crictl $crictl_version" >&2
	GOBIN="$cache" CGO_ENABLED=0 nice -n 19 go install "sigs.k8s.io/cri-tools/cmd/crictl@$crictl_version"
fi

# Build every missing component in one go build invocation: they share most
# of their packages, and one invocation schedules all of them across the
# cores at once instead of leaving a core idle while one binary links.
missing=""
pkgs=""
for c in "$@"; do
	if [ "$c" = etcd ]; then
		continue
	fi
	if [ -x "$cache/$c" ]; then
		echo "kubernetes: $c $version cached in $cache" >&2
		continue
	fi
	missing="$missing $c"
	pkgs="$pkgs k8s.io/kubernetes/cmd/$c"
done
if [ -n "$missing" ]; then
	echo "kubernetes: building$missing $version (cold: about 5 min on 2 idle cores)" >&2
	start=$(date +%s)
	# Build beside, then rename: an interrupted build never leaves a
	# binary the next run would take as complete.
	partial="$cache/.partial"
	rm -rf "$partial"
	mkdir -p "$partial"
	# shellcheck disable=SC2086 # pkgs is a list of words
	(cd "$here" && CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags "$ldflags" \
		-o "$partial/" $pkgs)
	for c in $missing; do
		mv "$partial/$c" "$cache/$c"
	done
	rmdir "$partial"
	echo "kubernetes: built$missing in $(($(date +%s) - start)) s" >&2
fi
# etcd for the one-node cluster: Debian 12's etcd-server (3.4.23, which
# kube-apiserver 1.37 runs on) costs a download instead of a 12-minute build.
# The package is only unpacked: installing it would register a service.
for c in "$@"; do
	if [ "$c" != etcd ] || [ -x "$cache/etcd" ]; then
		continue
	fi
	echo "kubernetes: unpacking etcd from Debian's etcd-server" >&2
	tmp=$(mktemp -d)
	# A fresh machine may have no package lists yet.
	(cd "$tmp" && { apt-get download etcd-server >&2 ||
		{ apt-get update >&2 && apt-get download etcd-server >&2; }; } &&
		dpkg-deb --fsys-tarfile etcd-server_*.deb | tar -x ./usr/bin/etcd)
	mv "$tmp/usr/bin/etcd" "$cache/etcd"
	rm -rf "$tmp"
done
echo "$cache"
