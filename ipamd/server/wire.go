package server

import (
	"context"
	"fmt"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"google.golang.org/protobuf/proto"
)

// WireHandler answers the wire framing, the only protocol the socket
// serves, with the Server's methods; their errors are already wire errors
// (apierr's table).
func (s *Server) WireHandler() Handler {
	return func(ctx context.Context, m wire.Method, payload []byte) ([]byte, error) {
		switch m {
		case wire.MethodAdd:
			return serveWire(ctx, m, payload, &ipamdv1.AddRequest{}, s.Add)
		case wire.MethodDel:
			return serveWire(ctx, m, payload, &ipamdv1.DelRequest{}, s.Del)
		case wire.MethodCheck:
			return serveWire(ctx, m, payload, &ipamdv1.CheckRequest{}, s.Check)
		case wire.MethodGC:
			return serveWire(ctx, m, payload, &ipamdv1.GCRequest{}, s.GC)
		case wire.MethodStatus:
			return serveWire(ctx, m, payload, &ipamdv1.StatusRequest{}, s.Status)
		default:
			return nil, &wire.Error{Code: wire.CodeUnimplemented, Message: fmt.Sprintf("unknown method %s", m)}
		}
	}
}

func serveWire[Req, Resp proto.Message](ctx context.Context, m wire.Method, payload []byte, req Req,
	call func(context.Context, Req) (Resp, error)) ([]byte, error) {
	if err := proto.Unmarshal(payload, req); err != nil {
		return nil, &wire.Error{Code: wire.CodeInvalidArgument, Message: fmt.Sprintf("decode %s request: %v", m, err)}
	}
	resp, err := call(ctx, req)
	if err != nil {
		return nil, err // a *wire.Error already (Server.track)
	}
	out, err := proto.Marshal(resp)
	if err != nil {
		return nil, &wire.Error{Code: wire.CodeInternal, Message: fmt.Sprintf("encode %s response: %v", m, err)}
	}
	return out, nil
}
