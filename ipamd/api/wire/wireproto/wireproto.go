// Package wireproto sends ipamd's generated protobuf messages (package
// ipamdv1) over a wire.Client, for Go tools and tests. It defines no
// message: messages.proto is the API's one definition. The CNI plugin
// does not use it: it speaks package msg, generated from the same file,
// and links no protobuf runtime.
package wireproto

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
)

// Call sends req as method m over c and decodes the answer into resp. A
// non-OK answer is returned as *wire.Error; the context's deadline bounds
// the whole exchange.
func Call(ctx context.Context, c *wire.Client, m wire.Method, req, resp proto.Message) error {
	payload, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", m, err)
	}
	body, err := c.Exchange(ctx, m, payload)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(body, resp); err != nil {
		return fmt.Errorf("decode %s response from ipamd: %w", m, err)
	}
	return nil
}
