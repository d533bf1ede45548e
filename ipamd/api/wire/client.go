package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"google.golang.org/protobuf/proto"
)

// Client sends requests over one connection to ipamd's socket. It is not
// safe for concurrent use: the CNI plugin makes one call per process.
type Client struct {
	conn net.Conn
	path string
}

// Dial connects to ipamd's unix socket at path.
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to ipamd at %s: %w", path, err)
	}
	return &Client{conn: conn, path: path}, nil
}

// Call sends req as method m and decodes the answer into resp. A non-OK
// answer is returned as *Error; the context's deadline bounds the whole
// exchange.
func (c *Client) Call(ctx context.Context, m Method, req, resp proto.Message) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Time{}
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("%s to ipamd at %s: %w", m, c.path, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	payload, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", m, err)
	}
	if err := WriteRequest(c.conn, m, payload); err != nil {
		return c.callError(ctx, m, err)
	}
	code, body, err := ReadResponse(c.conn)
	if err != nil {
		return c.callError(ctx, m, err)
	}
	if code != CodeOK {
		return &Error{Code: code, Message: string(body)}
	}
	if err := proto.Unmarshal(body, resp); err != nil {
		return fmt.Errorf("decode %s response from ipamd: %w", m, err)
	}
	return nil
}

func (c *Client) callError(ctx context.Context, m Method, err error) error {
	if _, has := ctx.Deadline(); has && errors.Is(err, os.ErrDeadlineExceeded) {
		// The connection's deadline is the context's: the read timed out
		// at the very moment the context expires, so report it as such.
		<-ctx.Done()
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s to ipamd at %s: %w", m, c.path, ctxErr)
	}
	return fmt.Errorf("%s to ipamd at %s: %w", m, c.path, err)
}

// Close closes the connection.
func (c *Client) Close() error {
	return c.conn.Close()
}
