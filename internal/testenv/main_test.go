package testenv_test

import (
	"os"
	"testing"

	"github.com/sandboxipam/sandboxipam/internal/testenv"
)

// One daemon of each kind for the whole package, as the package doc shows.
var (
	docker     = testenv.SharedDocker(testenv.DockerOptions{})
	containerd = testenv.SharedContainerd(testenv.ContainerdOptions{})
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, docker, containerd))
}
