// Package deps pins the project's third-party modules while the packages
// that use them are written, so that parallel work does not race on go.mod.
// Delete it once every module below is imported by real code.
package deps

import (
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	_ "github.com/aws/aws-sdk-go-v2/service/ec2"
	_ "github.com/containerd/containerd/v2/client"
	_ "github.com/containernetworking/cni/pkg/skel"
	_ "github.com/containernetworking/cni/pkg/types/100"
	_ "github.com/containernetworking/plugins/pkg/ns"
	_ "github.com/docker/docker/client"
	_ "github.com/hashicorp/go-hclog"
	_ "github.com/hashicorp/go-plugin"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/vishvananda/netlink"
	_ "go.yaml.in/yaml/v3"
	_ "google.golang.org/grpc"
	_ "google.golang.org/grpc/health"
	_ "google.golang.org/protobuf/proto"
	_ "k8s.io/cri-api/pkg/apis/runtime/v1"
)
