package endpoint

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Protocol is the wire protocol a socket answers with.
type Protocol int

const (
	// ProtocolUnknown: the server closed the connection or sent something
	// that is neither HTTP/1 nor HTTP/2.
	ProtocolUnknown Protocol = iota
	// ProtocolHTTP1: an HTTP/1 server, such as the Docker Engine API.
	ProtocolHTTP1
	// ProtocolHTTP2: an HTTP/2 server, in practice a gRPC server such as
	// containerd, CRI-O or cri-dockerd.
	ProtocolHTTP2
)

// String names the protocol for error messages.
func (p Protocol) String() string {
	switch p {
	case ProtocolHTTP1:
		return "HTTP/1"
	case ProtocolHTTP2:
		return "HTTP/2 (gRPC)"
	default:
		return "an unknown protocol"
	}
}

// Identity is what a probe learnt about the server behind a socket.
type Identity struct {
	Protocol Protocol
	// DockerAPIVersion is the Api-Version header of an HTTP/1 answer;
	// only the Docker Engine (and its imitators) set it.
	DockerAPIVersion string
	// Server is the Server header of an HTTP/1 answer, e.g.
	// "Docker/20.10.24 (linux)".
	Server string
}

// IsDocker reports whether the server answered like the Docker Engine API.
func (id Identity) IsDocker() bool {
	return id.Protocol == ProtocolHTTP1 && id.DockerAPIVersion != ""
}

// Describe says in a few words what answered, for error messages.
func (id Identity) Describe() string {
	switch {
	case id.IsDocker():
		return fmt.Sprintf("the Docker Engine API %s", id.DockerAPIVersion)
	case id.Protocol == ProtocolHTTP1 && id.Server != "":
		return fmt.Sprintf("an HTTP/1 server %q", id.Server)
	default:
		return id.Protocol.String()
	}
}

// probeTimeout bounds a probe when the caller's context has no deadline:
// a probe runs only after a call already failed, and must not hang.
const probeTimeout = 2 * time.Second

// http2FrameHeaderLen is the length of an HTTP/2 frame header; a gRPC
// server opens every connection with a SETTINGS frame (type 0x4).
const (
	http2FrameHeaderLen = 9
	http2FrameSettings  = 0x4
)

// Identify tells what kind of server listens on the socket behind uri.
// It first asks GET /_ping over HTTP/1.1 and classifies the first bytes
// of the answer: an HTTP/1 server answers with a status line and headers
// (the Docker Engine with its Api-Version), and a gRPC server usually
// sends its HTTP/2 SETTINGS frame before it notices the request is not
// HTTP/2. When the server instead closes the connection without a word,
// a second probe speaks the HTTP/2 client preface, which a gRPC server
// always answers with SETTINGS. The error is a dial error when nothing
// listens on the socket.
func Identify(ctx context.Context, uri string) (Identity, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	identity, err := probe(ctx, uri, "GET /_ping HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	if err != nil || identity.Protocol != ProtocolUnknown {
		return identity, err
	}
	return probe(ctx, uri, http2ClientPreface+string(http2EmptySettings))
}

// The HTTP/2 client connection preface: the magic string, then a SETTINGS
// frame, here an empty one (length 0, type SETTINGS, no flags, stream 0).
const http2ClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

var http2EmptySettings = []byte{0, 0, 0, http2FrameSettings, 0, 0, 0, 0, 0}

// probe sends request on a fresh connection and classifies the answer.
func probe(ctx context.Context, uri, request string) (Identity, error) {
	conn, err := Dial(ctx, uri)
	if err != nil {
		return Identity{}, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(deadline); err != nil {
			return Identity{}, fmt.Errorf("set probe deadline: %w", err)
		}
	}
	if _, err := io.WriteString(conn, request); err != nil {
		return Identity{}, nil // closed on us: nothing we recognise
	}
	reader := bufio.NewReader(conn)
	head, err := reader.Peek(http2FrameHeaderLen)
	if err != nil && len(head) == 0 {
		return Identity{}, nil
	}
	return classify(head, reader), nil
}

func classify(head []byte, reader *bufio.Reader) Identity {
	if bytes.HasPrefix(head, []byte("HTTP/1.")) {
		response, err := http.ReadResponse(reader, nil)
		if err != nil {
			return Identity{Protocol: ProtocolHTTP1}
		}
		defer response.Body.Close()
		return Identity{
			Protocol:         ProtocolHTTP1,
			DockerAPIVersion: response.Header.Get("Api-Version"),
			Server:           response.Header.Get("Server"),
		}
	}
	if len(head) == http2FrameHeaderLen && head[3] == http2FrameSettings {
		return Identity{Protocol: ProtocolHTTP2}
	}
	return Identity{Protocol: ProtocolUnknown}
}
