package e2e_test

import (
	"os"
	"testing"

	"github.com/sandboxipam/sandboxipam/cni/internal/cnitest"
)

func TestMain(m *testing.M) { os.Exit(cnitest.RunTests(m)) }
