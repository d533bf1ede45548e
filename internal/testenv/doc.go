// Package testenv starts private, throw-away container runtimes for tests
// and demos: a containerd with its CRI plugin (StartContainerd), a Docker
// Engine (StartDocker), a CRI-O (StartCRIO) and a cri-dockerd in front of a
// Docker Engine (StartCRIDockerd), each with its own root, state, sockets,
// cgroup parent and, for the CRI runtimes, its own network namespace, so
// that they never disturb the host or each other and leave nothing behind
// after Stop. CRI-O and cri-dockerd are built by make test-tools from the
// modules pinned in tools/crio and tools/cri-dockerd; without them their
// Start returns an error wrapping ErrUnavailable (a skip, or a failure
// under CI=true).
// ContainerdOptions.DisableCRI starts a containerd as Docker starts its
// own, with the CRI plugin disabled, for tests that an adapter refuses it.
//
// Both load a pause image built from this module's cmd/pause (BuildPause,
// internal/image), because no registry is reachable.
//
// # One daemon per test package
//
// Starting a daemon costs about half a second and a test binary may hold
// many tests, so each package shares one daemon of each kind among its
// tests: TestMain hands them to Run, the first test that calls Get starts
// one (a "go test -run" that selects no such test starts nothing), and Run
// stops it after the last test. Each test removes the pods it created,
// through a fixture's Cleanup:
//
//	var (
//		docker     = testenv.SharedDocker(testenv.DockerOptions{})
//		containerd = testenv.SharedContainerd(testenv.ContainerdOptions{})
//	)
//
//	func TestMain(m *testing.M) {
//		os.Exit(testenv.Run(m, docker, containerd))
//	}
//
//	func TestSomething(t *testing.T) {
//		ctrd := containerd.Get(t) // may skip; fails instead when CI=true
//		...
//	}
//
// An empty Dir in the options means a fresh temporary directory. Outside
// tests (a demo): call EnsurePackages, StartContainerd with a Dir from
// os.MkdirTemp (keep it short: unix socket paths hold at most 107 bytes),
// then Stop.
//
// # Stale state
//
// A test binary that is killed cannot stop its daemons. Every instance is
// therefore recorded in a small file under /run/sandboxipam-testenv (the
// same tmpfs lifetime as the cgroups and mounts it describes), and every
// Start first tears down the instances whose owning process is gone: their
// processes (by cgroup and by command line), mounts and directories. A Dir
// that is reused is torn down the same way before the new daemon starts.
//
// What cannot be moved under Dir: shims put their sockets in
// /run/containerd/s (removed by ID on teardown), libcni caches results in
// /var/lib/cni/results (removed by ID on teardown, and for CRI-O's default
// network, which is named after the instance, by network), CRI-O creates
// /etc/crio/policies (removed on teardown if it was absent and is empty),
// and dockerd creates the empty directory /run/docker/plugins. The host's network namespace,
// /etc, /opt and /var/lib are otherwise untouched.
//
// Requires root, Linux, and the Debian packages EnsurePackages installs.
package testenv
