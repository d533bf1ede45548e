package kubeenv

import (
	"context"
	"net"
	"runtime"

	"github.com/vishvananda/netns"
)

// DialFunc dials like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// NetNSDialer dials from inside the network namespace at nsPath, or from
// the caller's own when nsPath is "".
func NetNSDialer(nsPath string) DialFunc {
	if nsPath == "" {
		var d net.Dialer
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			c, err := dialIn(ctx, nsPath, network, addr)
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}

// dialIn dials from a thread moved into the namespace at nsPath. The
// thread goes back to its own namespace and is unlocked. Were it left to
// exit with the goroutine instead, a child this process had started from
// that thread would get its Pdeathsig (SIGKILL): the components are
// started with one. A thread that cannot go back stays locked and dies
// with its goroutine, which is then the lesser harm.
func dialIn(ctx context.Context, nsPath, network, addr string) (net.Conn, error) {
	runtime.LockOSThread()
	own, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer own.Close()
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if netns.Set(own) == nil {
		runtime.UnlockOSThread()
	}
	return c, err
}
