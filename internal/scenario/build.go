package scenario

import (
	"context"
	"path/filepath"

	"github.com/sandboxipam/sandboxipam/internal/testsupport"
	"github.com/sandboxipam/sandboxipam/ipamd/config"
)

// BuildBinaries builds what a node runs into dir, laid out as `make build`
// lays out bin/: ipamd, ipamctl, sandboxipam (the CNI plugin, static) and
// adapters/<binary> for every row of ipamd's adapter table.
func BuildBinaries(ctx context.Context, dir string) error {
	if err := testsupport.Build(ctx, dir, false, "./cmd/ipamd", "./cmd/ipamctl"); err != nil {
		return err
	}
	if err := testsupport.Build(ctx, dir, true, "./cmd/sandboxipam"); err != nil {
		return err
	}
	return testsupport.Build(ctx, filepath.Join(dir, "adapters"), false, config.AdapterCmds()...)
}

// ModuleRoot finds the repository root by walking up from the working
// directory to go.mod.
func ModuleRoot() (string, error) { return testsupport.ModuleRoot() }
