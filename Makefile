# sandboxipam: runtime adapters and a node IPAM daemon that record every pod IP
# under the pod's infra sandbox ID.

GO        ?= go
BIN       := bin
PKGS      := ./...
# VERSION, when set, is what every binary prints for --version, linked in
# with -X: a release is built with make build VERSION=v0.2.0. Left empty, a
# binary says internal/version's Release and the commit go build stamps,
# v0.2.0+5353417e5405 (.dirty after it for a modified tree), as go test's
# own builds do.
VERSION   ?=
# Binaries built by the tests use the same compile flags
# (internal/testsupport.BuildFlags), so one build cache serves make build,
# go test and the tests' own builds; -ldflags changes only the link step.
# The CNI plugin, whose start-up time counts, does not link grpc at all.
GOFLAGS_BUILD := -ldflags "-X github.com/sandboxipam/sandboxipam/internal/version.override=$(VERSION)"
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.5.1
STATICCHECK_VERSION        := v0.8.2
CNI_PLUGINS_VERSION         = $(shell awk '$$1 == "require" && $$2 == "github.com/containernetworking/plugins" { print $$3 }' tools/cni-plugins/go.mod)

.PHONY: all build test test-short test-tools runtime-tools fuzz lint generate bench demo clean tools image e2e-kubernetes bench-kubernetes bench-pool kubernetes-tools conformance-tools e2e-conformance e2e-upgrade

all: build

build:
	@mkdir -p $(BIN)/adapters
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/ ./cmd/ipamd ./cmd/ipamctl ./cmd/conformance
	# The CNI plugin is exec'd per ADD and DEL: static, so no dynamic loader runs.
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/ ./cmd/sandboxipam
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/adapters/ ./cmd/adapters/...
	# The CNI reference portmap plugin, chained after sandboxipam in the
	# conflist ipamd writes (hostPorts), from the module tools/cni-plugins
	# pins; static and stamped with its version, as upstream builds it.
	cd tools/cni-plugins && CGO_ENABLED=0 $(GO) build \
		-ldflags "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$(CNI_PLUGINS_VERSION)" \
		-o $(CURDIR)/$(BIN)/ github.com/containernetworking/plugins/plugins/meta/portmap

# The whole suite, real runtimes included. Tests that need root or a runtime
# skip on a machine without them, and fail instead when CI=true.
# -timeout only stops a hung package; it is no speed goal (see the README
# for the measured wall time): the conformance suite against two real
# runtimes takes minutes on a busy 2-core machine.
#
# go test runs packages in the order it is given them, two at a time on two
# cores, and the longest, conformance/e2e (about 5 minutes), sets the pace.
# Whatever runs beside it is slowed several times over (conformance/fixture
# takes 17 s alone and about 115 s there; ipamd/daemon's crash test, 200
# restarts of the real binary, about 45 s alone). Left in ./...'s order
# ipamd/daemon started after everything else and ran alone at the end.
# Listed after conformance/, it starts when conformance/fixture ends, beside
# conformance/e2e, and the short packages fill the other core after it.
# ./... then adds every package not named (each runs once). BENCHMARKS.md
# ("make test wall time") has the figures.
ORDERED_PKGS := ./adapters/... ./cmd/... ./cni/... ./cniinstall/... ./conformance/... ./ipamd/daemon/
test: test-tools
	$(GO) test -count=1 -timeout 20m $(ORDERED_PKGS) $(PKGS)

# Tools the tests run, built once from pinned modules under tools/ into
# bin/tools, where internal/testsupport finds them: no test go installs.
# The Kubernetes control plane too: the reclaimer, the routes keeper, the
# pool source and the CRDs are tested against a real kube-apiserver and
# etcd (internal/clusterfixture), which a cold machine does not have.
TOOLS_BIN      := $(BIN)/tools
CRICTL_VERSION  = $(shell awk '$$1 == "require" && $$2 == "sigs.k8s.io/cri-tools" { print $$3 }' tools/crictl/go.mod)

test-tools: $(TOOLS_BIN)/crictl runtime-tools kubernetes-tools

# CRI-O (crio, pinns) and cri-dockerd, built from the modules pinned in
# tools/crio and tools/cri-dockerd and cached by version under
# ${XDG_CACHE_HOME:-$HOME/.cache}/sandboxipam (cold: 150 s and
# 86 s on an idle 2-core machine, see BENCHMARKS.md; warm: nothing to do), linked into
# bin/tools, where internal/testenv finds them. Needs cgo, a C compiler and
# Debian's libseccomp-dev (.ci/run installs it).
runtime-tools:
	@mkdir -p $(TOOLS_BIN)
	dir=$$(tools/crio/build.sh) && ln -sf "$$dir/crio" "$$dir/pinns" $(TOOLS_BIN)/
	dir=$$(tools/cri-dockerd/build.sh) && ln -sf "$$dir/cri-dockerd" $(TOOLS_BIN)/

$(TOOLS_BIN)/crictl: tools/crictl/go.mod tools/crictl/go.sum
	@mkdir -p $(TOOLS_BIN)
	cd tools/crictl && $(GO) build -ldflags "-X sigs.k8s.io/cri-tools/pkg/version.Version=$(CRICTL_VERSION)" \
		-o $(CURDIR)/$(TOOLS_BIN)/crictl sigs.k8s.io/cri-tools/cmd/crictl

# Every fuzz target for FUZZTIME each, one after another (a fuzzer takes
# every core it is given). The checked-in corpora under testdata/fuzz run
# first; a new crasher is written there and fails the run: keep it as a
# test case. The budget is a count of executions, not a duration: with a
# duration, Go 1.26's fuzz coordinator can report its own deadline as a
# failure ("context deadline exceeded", no crasher written; golang/go#75804)
# when a busy machine delays a worker past it. A count has no deadline to
# race; a slow machine only takes longer (README: the measured time).
FUZZTIME ?= 200000x
fuzz:
	@set -e; for dir in $$(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . | grep -v '^./tools/' | xargs -n1 dirname | sort -u); do \
		for target in $$(grep -hoE '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | cut -d' ' -f2); do \
			echo "fuzz $$dir $$target for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$dir; \
		done; \
	done

# Quick loop: skips the real-runtime suites.
test-short:
	$(GO) test -short -count=1 $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

# Regenerates the protobuf code with pinned generators and Debian's protoc
# (apt-get install protobuf-compiler), then the CNI plugin's lean codec
# (ipamd/api/wire/msg/messages.go) from the same messages.proto.
tools:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

generate: tools
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" protoc --proto_path=. \
		--go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative \
		$$(find . -name '*.proto' -not -path '*/testdata/*' | sort)
	$(GO) generate ./ipamd/api/wire/msg

# The seed bug's scenario on a private containerd, narrated. Needs root;
# installs containerd, runc and the CNI plugins from Debian if missing.
demo: build
	$(GO) run ./internal/scenario/demo --bin $(BIN)

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# The container image, without a registry or a Docker daemon: static
# binaries and Debian's CA bundle (apt-get install ca-certificates) on an
# empty base, as an OCI archive (ctr -n k8s.io images import) and a
# docker-save archive (docker load) in dist/. Same inputs, same digest.
image:
	$(GO) run ./cmd/mkimage --out dist

# kubelet, kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2
# from the k8s.io/kubernetes module (one go build), crictl, and etcd unpacked
# from Debian's etcd-server, cached by version under
# ${XDG_CACHE_HOME:-$HOME/.cache}/sandboxipam/kubernetes (cold: see
# BENCHMARKS.md, "Kubernetes end to end"; warm: nothing to do).
kubernetes-tools:
	tools/kubernetes/build.sh

# What the network conformance suite adds (issue 38): kube-proxy, kubectl,
# e2e.test and agnhost from k8s.io/kubernetes, the agnhost image's busybox and
# nc from Debian, and CoreDNS; each cached by version.
conformance-tools: kubernetes-tools
	tools/kubernetes/build.sh kube-proxy kubectl agnhost e2e.test busybox netcat
	tools/coredns/build.sh

# Kubernetes' own network conformance suite, unmodified, on the three-node
# cluster made dual-stack (Service ranges of both families, kube-proxy for
# both, CoreDNS answering both): in pool mode the [sig-network] Conformance
# tests and the [Feature:IPv6DualStack] tests but their Granular Checks
# (TestConformancePool); in pool and node mode the Networking Granular Checks
# for Pods and Services and the dual-stack Granular Checks of the secondary
# family, node mode with the other dual-stack tests too (docs/testing.md's
# table). E2E_CONFORMANCE_RUN picks the tests: .ci/run takes
# TestConformancePool alone (about 14 minutes), not the Granular Checks (about
# 35 a mode).
E2E_CONFORMANCE_RUN ?= ^Test(ConformancePool|GranularChecksPool|GranularChecksNode)$$
e2e-conformance: conformance-tools runtime-tools
	SANDBOXIPAM_E2E_KUBERNETES=1 SANDBOXIPAM_E2E_CONFORMANCE=1 $(GO) test -count=1 -timeout 150m -v -run '$(E2E_CONFORMANCE_RUN)' ./e2e/kubernetes/

# The image run by ctr on a private containerd; a standalone kubelet running
# ipamd as a static pod from the DaemonSet in deploy/kubernetes, on a private
# containerd and on a private CRI-O (runtime-tools; warm: nothing to do); a one-node
# cluster on 127.0.0.1; and a cluster of three nodes on this machine (each its
# own network and mount namespaces, containerd and kubelet) that applies the
# containerd overlay with the routes component, and again in pool mode
# (components/pool: TestThreeNodePool). Needs root.
e2e-kubernetes: kubernetes-tools runtime-tools
	SANDBOXIPAM_E2E_KUBERNETES=1 $(GO) test -count=1 -timeout 60m -v ./e2e/kubernetes/

# Upgrade and rollback on the three-node cluster (issue 45), in pool mode and
# in node mode: the previous release (internal/release; its image built by its
# own cmd/mkimage from the repository's history and cached by commit in
# ${XDG_CACHE_HOME:-$HOME/.cache}/sandboxipam/releases/<commit>/image, its manifests rendered
# from its own tree) upgraded to this tree, rolled back with kubectl rollout
# undo, upgraded again and rolled back by applying its manifests again, while
# 30 agnhost netexec pods reach each other across the nodes every 200 ms
# (figures: BENCHMARKS.md, "Upgrade and rollback"). Needs root, the history
# (not a shallow clone) and kubectl and agnhost (conformance-tools).
e2e-upgrade: conformance-tools
	SANDBOXIPAM_E2E_KUBERNETES=1 SANDBOXIPAM_E2E_UPGRADE=1 $(GO) test -count=1 -timeout 45m -v -run '^TestUpgrade(Manifests|Pool|Node)$$' ./e2e/kubernetes/

# On the three-node cluster: 110 pods on one node from an API scale to all
# Running, sandboxipam against the bridge + host-local reference plugins, and
# ipamd's API requests (BENCHMARKS.md). Long: not part of e2e-kubernetes.
bench-kubernetes: kubernetes-tools
	SANDBOXIPAM_E2E_KUBERNETES=1 SANDBOXIPAM_E2E_BENCH=1 $(GO) test -count=1 -timeout 90m -v -run 'TestClusterScaleBenchmark' ./e2e/kubernetes/

# The cluster pool at scale (issue 23): 1,000 simulated nodes (POOL_SCALE_NODES,
# each its own pool source, datastore and API connection) claim blocks of one
# IPPool from a real kube-apiserver while each ADDs 100 pods (POOL_SCALE_PODS).
# Needs root and make kubernetes-tools; figures in BENCHMARKS.md.
bench-pool: kubernetes-tools
	$(GO) test -count=1 -run '^$$' -bench BenchmarkPoolClaimScale -benchtime 1x -timeout 40m ./ipamd/ipsource/pool

clean:
	rm -rf $(BIN) dist
