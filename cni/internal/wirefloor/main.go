// Command wirefloor is the lower bound BenchmarkIPAMAddDel measures the
// CNI plugin's IPAM path against; it is not a plugin and is never
// installed.
//
// It makes the plugin's ipamd call (a fresh connection to the socket, one
// Add or Del, answered after ipamd's durable commit) and nothing else: it
// decodes no network config (the socket and network come from
// WIREFLOOR_SOCKET and WIREFLOOR_NETWORK), links neither encoding/json nor
// the CNI library, checks nothing, and prints a fixed-shape result. What it
// takes (the Go runtime's start, the connect, ipamd's fdatasync, the exit)
// is about the least a Go plugin speaking ipamd's wire protocol can take;
// what the plugin takes beyond it is the plugin's own CNI work (decoding and
// validating the config and CNI_ARGS, the version and namespace checks,
// the CNI result), the only part a faster plugin could cut.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sandboxipam/sandboxipam/ipamd/api/wire"
	"github.com/sandboxipam/sandboxipam/ipamd/api/wire/msg"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "wirefloor: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	// A runtime writes the config to stdin whether or not it is read.
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	socket, network := os.Getenv("WIREFLOOR_SOCKET"), os.Getenv("WIREFLOOR_NETWORK")
	if socket == "" || network == "" {
		return errors.New("WIREFLOOR_SOCKET and WIREFLOOR_NETWORK must name ipamd's socket and the network")
	}
	att := &msg.Attachment{Network: network, SandboxID: os.Getenv("CNI_CONTAINERID"), IfName: os.Getenv("CNI_IFNAME")}
	conn, err := wire.Dial(ctx, socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	switch cmd := os.Getenv("CNI_COMMAND"); cmd {
	case "ADD":
		req := msg.AddRequest{Attachment: att, Netns: os.Getenv("CNI_NETNS"), Pod: podRef(os.Getenv("CNI_ARGS"))}
		body, err := conn.Exchange(ctx, wire.MethodAdd, req.Marshal(nil))
		if err != nil {
			return err
		}
		var resp msg.AddResponse
		if err := resp.Unmarshal(body); err != nil {
			return err
		}
		if len(resp.IPs) == 0 {
			return errors.New("ipamd answered no address")
		}
		_, err = os.Stdout.WriteString(`{"cniVersion":"1.0.0","ips":[{"address":"` + resp.IPs[0].Address + `"}]}` + "\n")
		return err
	case "DEL":
		_, err := conn.Exchange(ctx, wire.MethodDel, msg.DelRequest{Attachment: att}.Marshal(nil))
		return err
	default:
		return fmt.Errorf("CNI_COMMAND %q: only ADD and DEL", cmd)
	}
}

// podRef reads the pod's name and namespace from CNI_ARGS, as the plugin
// sends them.
func podRef(cniArgs string) *msg.PodRef {
	pod := &msg.PodRef{}
	for kv := range strings.SplitSeq(cniArgs, ";") {
		key, value, _ := strings.Cut(kv, "=")
		switch key {
		case "K8S_POD_NAME":
			pod.Name = value
		case "K8S_POD_NAMESPACE":
			pod.Namespace = value
		case "K8S_POD_UID":
			pod.UID = value
		}
	}
	return pod
}
