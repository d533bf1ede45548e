package daemon

import "context"

// StopSocketForTest closes the CNI socket alone, as a failing accept
// does, so a test can see every readiness answer name it while the
// introspection listener still serves.
func StopSocketForTest(ctx context.Context, d *Daemon) error {
	return d.endpoint.Load().Stop(ctx)
}
