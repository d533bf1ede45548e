package cni

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
)

// ipamdConn is one connection to ipamd's socket used with plain blocking
// system calls, bounded by the socket's own send and receive timeouts.
//
// It replaces wire.Client on the CNI path for one reason: a Go net.Conn
// parks the goroutine on the runtime's network poller while ipamd
// answers, and waking it again hands the call between threads. The plugin
// makes exactly one call and has nothing else to do meanwhile; a blocking
// read wakes in place, which counts on a loaded node.
type ipamdConn struct {
	file *os.File
	path string
}

// dialIPAMD connects to ipamd's unix socket at path. The context's
// deadline becomes the socket's timeout for connect, send and receive.
func dialIPAMD(ctx context.Context, path string) (*ipamdConn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket for ipamd: %w", err)
	}
	if err := setTimeouts(ctx, fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("connect to ipamd at %s: %w", path, err)
	}
	return &ipamdConn{file: os.NewFile(uintptr(fd), path), path: path}, nil
}

func setTimeouts(ctx context.Context, fd int) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	left := time.Until(deadline)
	if left <= 0 {
		return fmt.Errorf("connect to ipamd: %w", context.DeadlineExceeded)
	}
	tv := unix.NsecToTimeval(left.Nanoseconds())
	for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv); err != nil {
			return fmt.Errorf("set ipamd socket timeout: %w", err)
		}
	}
	return nil
}

// call sends req as method m and decodes the answer into resp. A non-OK
// answer is a *wire.Error, as from wire.Client.
func (c *ipamdConn) call(m wire.Method, req, resp proto.Message) error {
	payload, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", m, err)
	}
	if err := wire.WriteRequest(c.file, m, payload); err != nil {
		return c.ioError(m, err)
	}
	code, body, err := wire.ReadResponse(c.file)
	if err != nil {
		return c.ioError(m, err)
	}
	if code != wire.CodeOK {
		return &wire.Error{Code: code, Message: string(body)}
	}
	if err := proto.Unmarshal(body, resp); err != nil {
		return fmt.Errorf("decode %s response from ipamd: %w", m, err)
	}
	return nil
}

// ioError names a socket timeout as the deadline it is.
func (c *ipamdConn) ioError(m wire.Method, err error) error {
	if errors.Is(err, unix.EAGAIN) {
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return fmt.Errorf("%s to ipamd at %s: %w", m, c.path, err)
}

func (c *ipamdConn) Close() error {
	return c.file.Close()
}
