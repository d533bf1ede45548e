package e2e_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testenv"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// One private daemon of each kind for the whole package (see testenv),
// and one more of each that only the runtime-restart test uses: it stops
// and starts them, which would disturb every other test's pods.
var (
	docker = testenv.SharedDocker(testenv.DockerOptions{})
	// containerd runs dual-stack, IPv6-only and IPv4-only pods side by
	// side (dualStackCNI, set up by TestMain); get it through
	// criContainerd.
	containerd *testenv.Shared[*testenv.Containerd]
	cni        *dualStackCNI
	// The real CRI-O and cri-dockerd (on the shared dockerd) that the
	// crio and dockershim adapters are held to (real_test.go).
	crio       = testenv.SharedCRIO(testenv.CRIOOptions{})
	criDockerd = testenv.SharedCRIDockerd(docker, testenv.CRIDockerdOptions{})

	restartDocker     = testenv.SharedDocker(testenv.DockerOptions{})
	restartContainerd = testenv.SharedContainerd(testenv.ContainerdOptions{})
	restartCRIO       = testenv.SharedCRIO(testenv.CRIOOptions{})
	// A cri-dockerd of its own on a dockerd of its own: restarting it must
	// not disturb the shared one's pods.
	restartCRIDockerdEngine = testenv.SharedDocker(testenv.DockerOptions{})
	restartCRIDockerd       = testenv.SharedCRIDockerd(restartCRIDockerdEngine, testenv.CRIDockerdOptions{})
)

// binaries is the directory the binaries under test are built into, once
// per test binary.
var binaries struct {
	once sync.Once
	dir  string
	err  error
}

// packagesToBuild are the mains the tests run, relative to the module
// root: every shipped adapter (each named after its folder, as make build
// names it), the example and the broken adapters.
var packagesToBuild = []string{
	"./cmd/conformance",
	"./cmd/adapters/...",
	"./examples/adapter-docker-minimal",
	"./conformance/testdata/seedbug",
	"./conformance/testdata/shortid",
	"./conformance/testdata/emptyonerror",
	"./conformance/testdata/listsplain",
	"./conformance/testdata/shortprefix",
	"./conformance/testdata/swappedips",
	"./conformance/testdata/stalelist",
	"./conformance/testdata/stuckafteroutage",
	"./conformance/testdata/emptyonshortdeadline",
	"./conformance/testdata/dupids",
	"./conformance/testdata/listgetdisagree",
	"./conformance/testdata/namekeyed",
	"./conformance/testdata/kubeblind",
	"./conformance/testdata/ipv4only",
	"./conformance/testdata/firstiponly",
	"./conformance/testdata/swappedipv6",
	"./conformance/testdata/familyipam",
}

// brokenFocus selects the broken-adapter cases to run by name, for a
// quick loop on one: go test ./conformance/e2e -run Broken -broken 'dupids'.
var brokenFocus = flag.String("broken", "", "run only the broken-adapter cases whose name matches this regular expression")

func TestMain(m *testing.M) {
	flag.Parse()
	allowParallel(4)
	var err error
	if cni, err = newDualStackCNI(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	containerd = testenv.SharedContainerd(cni.options())
	code := testenv.Run(m, docker, containerd, crio, criDockerd,
		restartDocker, restartContainerd, restartCRIO, restartCRIDockerdEngine, restartCRIDockerd)
	if err := cni.remove(); err != nil {
		fmt.Fprintf(os.Stderr, "remove the dual-stack CNI directory: %v\n", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// allowParallel lets n of this package's tests run at once unless
// -parallel was given. The default, GOMAXPROCS, is 2 on a 2-core machine,
// and these tests spend most of their time waiting on a runtime that
// creates or removes containers, not computing.
func allowParallel(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// binary returns the path of a built main, named after its package
// directory, building them all on first use.
func binary(t testing.TB, name string) string {
	t.Helper()
	binaries.once.Do(func() { binaries.dir, binaries.err = buildAll() })
	if binaries.err != nil {
		t.Fatal(binaries.err)
	}
	return filepath.Join(binaries.dir, name)
}

// buildAll builds every package under test, with the Makefile's flags so
// that make build's cache serves it, into a directory kept across runs so
// that a warm run links nothing (testsupport.LinkDir).
func buildAll() (string, error) {
	dir, err := testsupport.LinkDir("conformance-e2e")
	if err != nil {
		return "", fmt.Errorf("build dir: %w", err)
	}
	return dir, testsupport.Build(context.Background(), dir, false, packagesToBuild...)
}
