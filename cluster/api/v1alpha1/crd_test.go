package v1alpha1_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	yaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/sandboxipam/sandboxipam/cluster/api/v1alpha1"
	"github.com/sandboxipam/sandboxipam/internal/clusterfixture"
	"github.com/sandboxipam/sandboxipam/internal/testsupport"
)

// The shipped CRDs on a real kube-apiserver: they install (Start), the
// example IPPool is accepted with its values, omitted block sizes take
// their defaults, the CEL rules refuse bad pools and blocks with their
// messages, a block's claim cannot be edited, and a second create of a
// block's name is AlreadyExists: the claim.
func TestCRDsOnARealAPIServer(t *testing.T) {
	_, kc := clusterfixture.StartCounted(t)
	ctx := t.Context()
	pools := kc.Dynamic.Resource(v1alpha1.IPPoolResource)
	blocks := kc.Dynamic.Resource(v1alpha1.IPBlockResource)

	data, err := os.ReadFile(filepath.Join(testsupport.Root(t), "examples", "ippool.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var example unstructured.Unstructured
	if err := yaml.Unmarshal(data, &example.Object); err != nil {
		t.Fatal(err)
	}
	got := create(t, ctx, pools.Create, &example)
	p, err := v1alpha1.PoolFrom(got)
	if err != nil || p.Spec.IPv4.BlockSize != 26 || p.Spec.IPv6.CIDRs[0] != "fd00:10::/104" {
		t.Fatalf("example IPPool read back as %+v, %v", p.Spec, err)
	}
	got = create(t, ctx, pools.Create, pool("defaults", `{"ipv4":{"cidrs":["198.18.0.0/24"]},"ipv6":{"cidrs":["fd00:1::/112"]}}`))
	if p, _ := v1alpha1.PoolFrom(got); p.Spec.IPv4.BlockSize != 26 || p.Spec.IPv6.BlockSize != 122 {
		t.Errorf("defaulted block sizes %d and %d, want 26 and 122", p.Spec.IPv4.BlockSize, p.Spec.IPv6.BlockSize)
	}
	// A family whose every CIDR retires, its last blocks draining.
	got = create(t, ctx, pools.Create, pool("retiring", `{"ipv4":{"retiringCIDRs":["198.18.2.0/24"]},"ipv6":{"cidrs":["fd00:2::/112"]}}`))
	if p, _ := v1alpha1.PoolFrom(got); len(p.Spec.IPv4.CIDRs) != 0 || len(p.Spec.IPv4.RetiringCIDRs) != 1 || p.Spec.HasBlock(netip.MustParsePrefix("198.18.2.64/26")) != true {
		t.Errorf("a retiring family read back as %+v", p.Spec.IPv4)
	}
	for name, tc := range map[string]struct{ spec, want string }{
		"empty":                {`{}`, "a pool needs spec.ipv4, spec.ipv6 or both"},
		"v6 in ipv4":           {`{"ipv4":{"cidrs":["fd00::/64"]}}`, "must be a canonical IPv4 CIDR"},
		"host bits":            {`{"ipv4":{"cidrs":["198.18.0.1/24"]}}`, "must be a canonical IPv4 CIDR"},
		"v4 in ipv6":           {`{"ipv6":{"cidrs":["198.18.0.0/24"]}}`, "must be a canonical IPv6 CIDR"},
		"block too big":        {`{"ipv4":{"cidrs":["198.18.0.0/16"],"blockSize":31}}`, "spec.ipv4.blockSize"},
		"no cidrs":             {`{"ipv4":{"cidrs":[]}}`, "spec.ipv4.cidrs"},
		"claimed and retiring": {`{"ipv4":{"cidrs":["198.18.0.0/24"],"retiringCIDRs":["198.18.0.0/24"]}}`, "spec.ipv4.retiringCIDRs: Invalid value"},
	} {
		if _, err := pools.Create(ctx, pool("bad-"+strings.ReplaceAll(name, " ", "-"), tc.spec), metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("IPPool %s: %v, want Invalid naming %q", name, err, tc.want)
		}
	}

	b := v1alpha1.NewBlock("default", netip.MustParsePrefix("198.18.0.64/26"), "node-1", "uid-1", metav1.NewTime(time.Now()))
	u, err := v1alpha1.ToUnstructured(&b)
	if err != nil {
		t.Fatal(err)
	}
	got = create(t, ctx, blocks.Create, u)
	if got.GetLabels()[v1alpha1.NodeLabel] != "node-1" {
		t.Errorf("IPBlock labels %v, want %s=node-1", got.GetLabels(), v1alpha1.NodeLabel)
	}
	u2, _ := v1alpha1.ToUnstructured(&b)
	if _, err := blocks.Create(ctx, u2, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create of %s: %v, want AlreadyExists (the claim)", b.Name, err)
	}
	if err := unstructured.SetNestedField(got.Object, "node-2", "spec", "nodeName"); err != nil {
		t.Fatal(err)
	}
	if _, err := blocks.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "a claim is never edited") {
		t.Errorf("editing a claim: %v, want Invalid: a claim is never edited", err)
	}
	bad := v1alpha1.NewBlock("default", netip.MustParsePrefix("198.18.1.0/26"), "node-1", "uid-1", metav1.NewTime(time.Now()))
	bad.Spec.CIDR = "198.18.1.1/26"
	u3, _ := v1alpha1.ToUnstructured(&bad)
	if _, err := blocks.Create(ctx, u3, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must be a canonical CIDR") {
		t.Errorf("IPBlock with host bits: %v, want Invalid: must be a canonical CIDR", err)
	}
	checkGeometry(t, ctx, kc.Dynamic)
}

func pool(name, spec string) *unstructured.Unstructured {
	var s map[string]any
	if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.Group + "/" + v1alpha1.Version, "kind": v1alpha1.IPPoolKind,
		"metadata": map[string]any{"name": name}, "spec": s,
	}}
}

func create(t *testing.T, ctx context.Context, f func(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error), u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := f(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return got
}
