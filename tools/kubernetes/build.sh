#!/bin/sh
# Builds the Kubernetes components the e2e-kubernetes suite runs and caches
# them by version outside the repository, so a second run does not rebuild:
# kubelet alone costs about 1,500 CPU-seconds cold.
#
#   tools/kubernetes/build.sh [component ...]   (default: all four)
#
# Prints the cache directory on stdout. KUBE_CACHE_DIR overrides it.
set -eu

version=v1.37.2
crictl_version=v1.37.0
here=$(cd "$(dirname "$0")" && pwd)
cache=${KUBE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxipam/kubernetes/$version}
mkdir -p "$cache"

if [ $# -eq 0 ]; then
	set -- kubelet kube-apiserver kube-controller-manager kube-scheduler
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

for c in "$@"; do
	if [ -x "$cache/$c" ]; then
		echo "kubernetes: $c $version cached in $cache" >&2
		continue
	fi
	echo "kubernetes: building $c $version (cold: kubelet takes ~1,500 CPU-seconds)" >&2
	start=$(date +%s)
	# Build beside, then rename: an interrupted build never leaves a
	# binary the next run would take as complete.
	(cd "$here" && CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags "$ldflags" \
		-o "$cache/.$c.partial" "k8s.io/kubernetes/cmd/$c")
	mv "$cache/.$c.partial" "$cache/$c"
	echo "kubernetes: built $c in $(($(date +%s) - start)) s" >&2
done
echo "$cache"
