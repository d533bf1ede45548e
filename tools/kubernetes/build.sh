#!/bin/sh
# Builds the Kubernetes components the e2e-kubernetes suite runs and caches
# them by version outside the repository, so a second run does not rebuild:
# kubelet alone costs about 1,500 CPU-seconds cold.
#
#   tools/kubernetes/build.sh [component ...]
#
# Components: kubelet kube-apiserver kube-controller-manager kube-scheduler
# kube-proxy kubectl agnhost e2e.test (built from k8s.io/kubernetes: agnhost
# is the test image's binary, e2e.test the test binary of test/e2e, which
# runs kubectl), etcd, busybox and netcat (Debian's etcd-server,
# busybox-static and netcat-openbsd, unpacked here, never installed: no
# service is registered or started). Default: what e2e-kubernetes runs
# (kubelet, the control plane, etcd); the conformance suite names the rest.
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

# pkg_of names the package a component is built from.
pkg_of() {
	case "$1" in
	agnhost) echo k8s.io/kubernetes/test/images/agnhost ;;
	*) echo "k8s.io/kubernetes/cmd/$1" ;;
	esac
}

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
	case "$c" in etcd | busybox | netcat | e2e.test) continue ;; esac
	if [ -x "$cache/$c" ]; then
		echo "kubernetes: $c $version cached in $cache" >&2
		continue
	fi
	missing="$missing $c"
	pkgs="$pkgs $(pkg_of "$c")"
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
# e2e.test is a test binary: go test -c, one package, so a go build of its
# own. It shares most packages with the commands above, so it runs after them
# and reuses their build cache.
for c in "$@"; do
	if [ "$c" != e2e.test ] || [ -x "$cache/e2e.test" ]; then
		continue
	fi
	echo "kubernetes: building e2e.test $version (cold: about 10 min on 2 idle cores)" >&2
	start=$(date +%s)
	(cd "$here" && CGO_ENABLED=0 nice -n 19 go test -c -trimpath -ldflags "$ldflags" \
		-o "$cache/.e2e.test.partial" k8s.io/kubernetes/test/e2e)
	mv "$cache/.e2e.test.partial" "$cache/e2e.test"
	echo "kubernetes: built e2e.test in $(($(date +%s) - start)) s" >&2
done
# unpack_deb C PACKAGE PATH puts PATH of Debian's PACKAGE in the cache as C.
# The package is only unpacked: installing it could register a service.
unpack_deb() {
	echo "kubernetes: unpacking $1 from Debian's $2" >&2
	tmp=$(mktemp -d)
	# A fresh machine may have no package lists yet.
	(cd "$tmp" && { apt-get download "$2" >&2 ||
		{ apt-get update >&2 && apt-get download "$2" >&2; }; } &&
		dpkg-deb --fsys-tarfile "$2"_*.deb | tar -x ".$3")
	mv "$tmp$3" "$cache/$1"
	rm -rf "$tmp"
}
# etcd for the one-node cluster: Debian 12's etcd-server (3.4.23, which
# kube-apiserver 1.37 runs on) costs a download instead of a 12-minute build.
# busybox: the agnhost image's shell and tools (sh, nc, seq...), which the
# upstream image takes from Alpine; static, so it needs no library. netcat:
# the image's nc, OpenBSD's as in the upstream image (busybox's has no -u).
for c in "$@"; do
	if [ "$c" = etcd ] && [ ! -x "$cache/etcd" ]; then
		unpack_deb etcd etcd-server /usr/bin/etcd
	fi
	if [ "$c" = busybox ] && [ ! -x "$cache/busybox" ]; then
		unpack_deb busybox busybox-static /bin/busybox
	fi
	if [ "$c" = netcat ] && [ ! -x "$cache/netcat" ]; then
		unpack_deb netcat netcat-openbsd /bin/nc.openbsd
	fi
done
echo "$cache"
