//go:build unix

package wire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Client sends requests over one connection to ipamd's socket, with plain
// blocking system calls bounded by the socket's own send and receive
// timeouts. It is not safe for concurrent use: the CNI plugin makes one
// call per process.
//
// Blocking calls rather than a net.Conn, because a net.Conn parks the
// goroutine on the runtime's network poller while ipamd answers, and
// waking it hands the call between threads. A process that makes exactly
// one call has nothing else to do meanwhile; a blocking read wakes in
// place, which counts on a loaded node. The price: a context cancelled
// without a deadline does not interrupt a call in flight.
type Client struct {
	file *os.File
	fd   int
	path string
}

// Dial connects to ipamd's unix socket at path; the context's deadline
// bounds the connect.
func Dial(ctx context.Context, path string) (*Client, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket for ipamd: %w", err)
	}
	if err := setTimeouts(ctx, fd); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("connect to ipamd at %s: %w", path, err)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EAGAIN) {
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return nil, fmt.Errorf("connect to ipamd at %s: %w", path, err)
	}
	return &Client{file: os.NewFile(uintptr(fd), path), fd: fd, path: path}, nil
}

// setTimeouts makes the context's deadline the socket's send and receive
// timeout; without a deadline the socket blocks until ipamd answers.
func setTimeouts(ctx context.Context, fd int) error {
	var tv unix.Timeval // zero: no timeout
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline)
		if left <= 0 {
			return context.DeadlineExceeded
		}
		tv = unix.NsecToTimeval(left.Nanoseconds())
	}
	for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv); err != nil {
			return fmt.Errorf("set socket timeout: %w", err)
		}
	}
	return nil
}

// Exchange sends payload, an encoded request, as method m and returns the
// encoded response. A non-OK answer is returned as *Error; the context's
// deadline bounds the whole exchange and is reported as
// context.DeadlineExceeded. The client deals in bytes so that the CNI
// plugin links no protobuf runtime (package msg encodes its messages);
// wireproto.Call sends generated protobuf messages.
func (c *Client) Exchange(ctx context.Context, m Method, payload []byte) ([]byte, error) {
	if err := setTimeouts(ctx, c.fd); err != nil {
		return nil, fmt.Errorf("%s to ipamd at %s: %w", m, c.path, err)
	}
	if err := WriteRequest(c.file, m, payload); err != nil {
		return nil, c.ioError(m, err)
	}
	code, body, err := ReadResponse(c.file)
	if err != nil {
		return nil, c.ioError(m, err)
	}
	if code != CodeOK {
		return nil, &Error{Code: code, Message: string(body)}
	}
	return body, nil
}

// ioError names a socket timeout as the deadline it is.
func (c *Client) ioError(m Method, err error) error {
	if errors.Is(err, unix.EAGAIN) {
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return fmt.Errorf("%s to ipamd at %s: %w", m, c.path, err)
}

// Close closes the connection.
func (c *Client) Close() error {
	return c.file.Close()
}
