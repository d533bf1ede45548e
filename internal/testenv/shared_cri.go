package testenv

import (
	"context"
	"fmt"
	"log/slog"
)

// SharedCRIO describes a CRI-O for the tests of a package. An empty
// opts.Dir means a fresh temporary directory.
func SharedCRIO(opts CRIOOptions) *Shared[*CRIO] {
	return sharedOf(opts.Dir, "sbxipam-crio-", func(ctx context.Context, dir string, logger *slog.Logger) (*CRIO, error) {
		opts.Dir, opts.Logger = dir, cmpOrLogger(opts.Logger, logger)
		return StartCRIO(ctx, opts)
	})
}

// SharedCRIDockerd describes a cri-dockerd for the tests of a package, in
// front of the shared dockerd docker, which it starts when no test has
// yet. Hand both to Run, docker first, so that cri-dockerd stops first.
// opts.Docker is ignored; an empty opts.Dir means a fresh temporary
// directory.
func SharedCRIDockerd(docker *Shared[*Docker], opts CRIDockerdOptions) *Shared[*CRIDockerd] {
	return sharedOf(opts.Dir, "sbxipam-crid-", func(ctx context.Context, dir string, logger *slog.Logger) (*CRIDockerd, error) {
		if !docker.enabled {
			return nil, fmt.Errorf("testenv: the dockerd of a shared cri-dockerd is not handed to Run")
		}
		docker.once.Do(docker.startOnce)
		if docker.err != nil {
			return nil, fmt.Errorf("dockerd for cri-dockerd: %w", docker.err)
		}
		opts.Dir, opts.Docker = dir, docker.value
		opts.Logger = cmpOrLogger(opts.Logger, logger)
		return StartCRIDockerd(ctx, opts)
	})
}
