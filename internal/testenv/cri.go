package testenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cri.go: what the CRI runtimes (containerd, CRI-O, cri-dockerd) share:
// waiting for CRI to answer and be ready, removing every sandbox, and the
// stop of an instance.

// answeringCRI waits for d's socket at address, then for CRI at endpoint
// to answer Version, logs how long that took since began, and returns the
// connection and its runtime service. A gRPC connection that failed once
// backs off for a second: it waits for the socket itself first.
func answeringCRI(ctx context.Context, d *daemon, address, endpoint string, log *slog.Logger, began time.Time) (*grpc.ClientConn, criapi.RuntimeServiceClient, error) {
	if err := d.waitReady(ctx, func(ctx context.Context) error { return dialUnix(ctx, address) }); err != nil {
		return nil, nil, err
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("CRI client: %w", err)
	}
	rs := criapi.NewRuntimeServiceClient(conn)
	answers := func(ctx context.Context) error {
		_, err := rs.Version(ctx, &criapi.VersionRequest{})
		return err
	}
	if err := d.waitReady(ctx, answers); err != nil {
		conn.Close()
		return nil, nil, err
	}
	log.Info(d.name+" answers CRI", "after", time.Since(began), "endpoint", endpoint)
	return conn, rs, nil
}

// usableCRI is a starting CRI runtime's daemon, where it listens and what
// makes it usable: its pause image visible, the runtime (and the network,
// when needNetwork) ready.
type usableCRI struct {
	daemon            *daemon
	address, endpoint string
	image             string
	needNetwork       bool
	log               *slog.Logger
}

// wait waits for CRI to answer, puts the pause image in with load, then
// waits until CRI sees it and reports ready.
func (u usableCRI) wait(ctx context.Context, began time.Time, load func(context.Context) error) error {
	conn, rs, err := answeringCRI(ctx, u.daemon, u.address, u.endpoint, u.log, began)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := load(ctx); err != nil {
		return err
	}
	is := criapi.NewImageServiceClient(conn)
	if err := u.daemon.waitReady(ctx, func(ctx context.Context) error { return criReady(ctx, rs, is, u.image, u.needNetwork) }); err != nil {
		return err
	}
	u.log.Info(u.daemon.name+" ready", "after", time.Since(began))
	return nil
}

// errCRINotReady: the CRI plugin answers but is not ready for pods yet.
var errCRINotReady = errors.New("CRI not ready")

func criReady(ctx context.Context, rs criapi.RuntimeServiceClient, is criapi.ImageServiceClient, image string, needNetwork bool) error {
	img, err := is.ImageStatus(ctx, &criapi.ImageStatusRequest{Image: &criapi.ImageSpec{Image: image}})
	if err != nil {
		return err
	}
	if img.GetImage() == nil {
		return fmt.Errorf("%w: image %s not visible", errCRINotReady, image)
	}
	status, err := rs.Status(ctx, &criapi.StatusRequest{})
	if err != nil {
		return err
	}
	for _, cond := range status.GetStatus().GetConditions() {
		if !needNetwork && cond.GetType() == criapi.NetworkReady {
			continue
		}
		if !cond.GetStatus() {
			return fmt.Errorf("%w: %s: %s %s", errCRINotReady, cond.GetType(), cond.GetReason(), cond.GetMessage())
		}
	}
	return nil
}

// removeAllSandboxes stops and removes every sandbox of the CRI runtime at
// endpoint by ID while its daemon d runs.
func removeAllSandboxes(ctx context.Context, d *daemon, endpoint string) error {
	select {
	case <-d.exited:
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, stopGrace)
	defer cancel()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("CRI client: %w", err)
	}
	defer conn.Close()
	rs := criapi.NewRuntimeServiceClient(conn)
	list, err := rs.ListPodSandbox(ctx, &criapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	var errs []error
	for _, sb := range list.GetItems() {
		if _, err := rs.StopPodSandbox(ctx, &criapi.StopPodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil {
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", sb.GetId(), err))
			continue
		}
		if _, err := rs.RemovePodSandbox(ctx, &criapi.RemovePodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", sb.GetId(), err))
		}
	}
	return errors.Join(errs...)
}

// instance is what stopInstance needs of a runtime instance.
type instance struct {
	name   string
	dir    string
	daemon *daemon // nil when it never started
	then   *daemon // stopped after daemon when set: dockerd's containerd
	record instanceRecord
	logger *slog.Logger
}

// stopInstance runs removePods and stops the daemon while there is one,
// and the daemon it runs on (then) after it, then tears down whatever the
// record names (processes, mounts, Dir) and removes the record. It is
// safe to call twice.
func stopInstance(ctx context.Context, in instance, removePods func(context.Context) error) error {
	began := time.Now()
	var errs []error
	if in.daemon != nil {
		if err := removePods(ctx); err != nil {
			errs = append(errs, err)
		}
		if err := in.daemon.stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if in.then != nil {
		if err := in.then.stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	in.logger.Info("daemon stopped", "dir", in.dir, "took", time.Since(began))
	if err := teardown(ctx, in.record); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop %s in %s: %w", in.name, in.dir, err)
	}
	_ = os.Remove(recordPath(in.dir))
	in.logger.Info("instance removed", "dir", in.dir, "took", time.Since(began))
	return nil
}
