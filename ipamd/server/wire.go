package server

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sandboxipam/sandboxipam/internal/version"
	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
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
	if field := unknownField(req.ProtoReflect()); field != "" {
		return nil, &wire.Error{Code: wire.CodeInvalidArgument, Message: fmt.Sprintf(
			"%s request carries %s, which this ipamd (%s) does not know: a CNI plugin newer than ipamd? "+
				"ipamd answers no request it cannot read whole (docs/upgrade.md)", m, field, version.String())}
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

// unknownField names the first field of m, or of a message inside it, that
// this build's messages.proto does not define ("field 7 of
// sandboxipam.ipamd.v1.PodRef (pod)"), or returns "". protobuf keeps such
// fields aside and decodes the rest, which is right for a field a reader
// may ignore; but a request field is something the plugin asks for, and an
// ipamd that silently ignores it may answer a different question than the
// one asked (a newer plugin's request during a rollout or a rollback). So
// the socket refuses the request, naming the field, instead.
func unknownField(m protoreflect.Message) string {
	return unknownIn(m, "")
}

func unknownIn(m protoreflect.Message, path string) string {
	if raw := m.GetUnknown(); len(raw) > 0 {
		num, _, n := protowire.ConsumeTag(raw)
		where := string(m.Descriptor().FullName())
		if path != "" {
			where += " (" + path + ")"
		}
		if n < 0 {
			return "undecodable bytes in " + where
		}
		return fmt.Sprintf("field %d of %s", num, where)
	}
	var found string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		name := string(fd.Name())
		if path != "" {
			name = path + "." + name
		}
		if fd.IsList() {
			for i := range v.List().Len() {
				if found = unknownIn(v.List().Get(i).Message(), fmt.Sprintf("%s[%d]", name, i)); found != "" {
					return false
				}
			}
			return true
		}
		found = unknownIn(v.Message(), name)
		return found == ""
	})
	return found
}
