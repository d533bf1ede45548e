package server_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
)

// TestWireRefusesUnknownFields: a request carrying a field this build's
// messages.proto lacks (a newer plugin's), at the top or nested, is
// refused as InvalidArgument naming the field and the message, and
// changes nothing; the same request without it is answered.
func TestWireRefusesUnknownFields(t *testing.T) {
	h := newHarness(t, "198.18.0.0/28")
	handler := h.srv.WireHandler()
	encode := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// field 15, varint 1: what a newer plugin's bool would look like.
	extra := protowire.AppendVarint(protowire.AppendTag(nil, 15, protowire.VarintType), 1)
	podWithExtra := append(encode(&ipamdv1.PodRef{Name: "p", Namespace: "ns"}), extra...)
	nested := protowire.AppendBytes(protowire.AppendTag(encode(&ipamdv1.AddRequest{Attachment: attachment("nested")}), 3, protowire.BytesType), podWithExtra)
	gcValid := protowire.AppendBytes(protowire.AppendTag(encode(&ipamdv1.GCRequest{Network: "testnet"}), 2, protowire.BytesType),
		append(encode(attachment("gc")), extra...))
	for _, tc := range []struct {
		name    string
		method  wire.Method
		payload []byte
		want    string
	}{
		{"top level", wire.MethodAdd, append(encode(addReq("top")), extra...), "Add request carries field 15 of sandboxipam.ipamd.v1.AddRequest, which this ipamd ("},
		{"nested", wire.MethodAdd, nested, "Add request carries field 15 of sandboxipam.ipamd.v1.PodRef (pod), which this ipamd ("},
		{"in a list", wire.MethodGC, gcValid, "GC request carries field 15 of sandboxipam.ipamd.v1.Attachment (valid[0]), which this ipamd ("},
		{"status", wire.MethodStatus, extra, "Status request carries field 15 of sandboxipam.ipamd.v1.StatusRequest, which this ipamd ("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := handler(t.Context(), tc.method, tc.payload)
			var werr *wire.Error
			if !errors.As(err, &werr) || werr.Code != wire.CodeInvalidArgument || !strings.HasPrefix(werr.Message, tc.want) {
				t.Fatalf("%s = %v, want InvalidArgument starting %q", tc.method, err, tc.want)
			}
		})
	}
	if st := h.store.Stats(); st.Assigned != 0 {
		t.Fatalf("refused requests assigned %d addresses", st.Assigned)
	}
	if _, err := handler(t.Context(), wire.MethodAdd, encode(addReq("plain"))); err != nil {
		t.Fatalf("the same Add without the field: %v", err)
	}
}
