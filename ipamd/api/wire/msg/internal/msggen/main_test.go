package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	ipamdv1 "github.com/sandboxipam/sandboxipam/ipamd/api/v1"
)

// messages.go is what msggen makes of messages.proto now: run
// `go generate ./ipamd/api/wire/msg` (make generate) after changing it.
func TestGeneratedFileIsCurrent(t *testing.T) {
	want, err := Generate(ipamdv1.File_ipamd_api_v1_messages_proto)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "messages.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("ipamd/api/wire/msg/messages.go is stale: run go generate ./ipamd/api/wire/msg")
	}
}

// A field of a kind the codec does not cover fails generation, naming it.
func TestUnsupportedKindFails(t *testing.T) {
	fdp := &descriptorpb.FileDescriptorProto{
		Name: new("x.proto"), Package: new("x"), Syntax: new("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: new("M"), Field: []*descriptorpb.FieldDescriptorProto{{
			Name: new("n"), Number: new(int32(1)), Type: descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: new("n"),
		}}}},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Generate(fd)
	if err == nil || !strings.Contains(err.Error(), "x.M.n: kind int64 is not supported") {
		t.Fatalf("Generate = %v, want an error naming x.M.n and int64", err)
	}
}

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{"sandbox_id": "SandboxID", "ifname": "IfName", "ips": "IPs", "IPAM_ONLY": "IPAMOnly", "netns": "Netns"} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
}
